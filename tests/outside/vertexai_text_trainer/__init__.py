"""Helper of vertexai_text_classification_task.py: distribution_utils.py from
GoogleCloudPlatform/vertex-ai-samples."""

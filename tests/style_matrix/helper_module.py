"""The style matrix's job: the pipeline and the model come from a helper package next to it."""

from matrix_helpers.data import make_dataset, synthetic_examples
from matrix_helpers.models import build_model

features, labels = synthetic_examples()
train_ds = make_dataset(features, labels, batch_size=32)
model = build_model(features=features.shape[1])
model.fit(train_ds, epochs=3)

"""The graph front end: a live tf.data dataset read from, and rebuilt from, its GraphDef."""

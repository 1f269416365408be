"""Watching a real ``fit``: step timing, per-epoch tallies, per-worker records, live findings.

The public entry point is :class:`pipedoctor.keras.Monitor`; the pieces here each do one job:
``steps`` times the calls of Keras's train and test functions, ``tally`` adds them up per epoch,
``worker`` names the process in a multi-worker job, ``records`` writes and reads the per-worker
files, ``scalars`` writes TensorBoard scalars, ``lines`` words what is printed.
"""

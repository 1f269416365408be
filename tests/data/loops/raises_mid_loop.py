"""A plain custom loop that raises at its 300th step, as a loop whose logging or metrics code
fails part-way does."""

from tiny_loop import ds, train_step

for epoch in range(100):
    for step, (xb, yb) in enumerate(ds):
        train_step(xb, yb)
        if epoch * 200 + step == 300:
            raise RuntimeError("the metrics server went away")

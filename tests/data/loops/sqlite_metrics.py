"""A plain custom loop that records each step's loss in a SQLite database opened before it, as
scripts that keep their metrics in a database do."""

import sqlite3

from tiny_loop import ds, train_step

con = sqlite3.connect("metrics.db")
for _epoch in range(100):
    for step, (xb, yb) in enumerate(ds):
        loss = train_step(xb, yb)
        con.execute("INSERT INTO metrics(step, loss) VALUES (?, ?)", (step, float(loss)))
        con.commit()
con.close()

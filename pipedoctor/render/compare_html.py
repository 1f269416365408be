"""``pipedoctor compare --format html``: one standalone page, the target metric drawn against
wall time and against samples seen, one line per run, above the table and the verdict."""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

from pipedoctor.render.charts import PALETTE, legend, line_chart
from pipedoctor.render.html import _STYLE, ROOT


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def render_compare_page(result: Mapping[str, Any]) -> str:
    from pipedoctor.compare import render_text

    target = result["target"]
    runs = [run for run in result["runs"] if run["curve"]]
    values = [point["value"] for run in runs for point in run["curve"]]
    top = max([*values, target["value"]]) * 1.05 if values else 1.0
    charts = []
    for axis, unit, title in (("wall_s", "s", "against wall time"),
                              ("samples", "samples", "against samples seen")):  # fmt: skip
        series = [
            (run["name"], [p[axis] for p in run["curve"]], [p["value"] for p in run["curve"]])
            for run in runs
        ]
        end = max((p[axis] for run in runs for p in run["curve"]), default=1.0)
        label = f"{target['metric']} {title}"
        charts.append(
            f"<h4>{_e(label)}</h4>"
            + line_chart(
                series,
                end,
                top,
                f"{top:.3g}",
                label,
                x_unit=unit,
                guide=(target["value"], f"target {target['value']:g}"),
            )  # fmt: skip
        )
    keys = legend([(run["name"], PALETTE[i % len(PALETTE)]) for i, run in enumerate(runs)])
    table = _e(render_text(result))
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>pipedoctor compare: {_e(target['metric'])}</title>\n</head>\n<body>\n"
        f'<div class="{ROOT}">{_STYLE}<h3>Time to {_e(target["metric"])} '
        f"{'≥' if target['higher_is_better'] else '≤'} {target['value']:g}</h3>"
        + "".join(charts)
        + keys
        + f'<pre style="white-space: pre-wrap">{table}</pre></div>\n</body>\n</html>\n'
    )

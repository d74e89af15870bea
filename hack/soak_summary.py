#!/usr/bin/env python3
"""Summarises a soak folder written by hack/soak.sh: soak.json and soak.svg.

    hack/soak_summary.py DIR CLK_TCK CONSOLE_ALIVE
"""
import csv
import html
import json
import sys

out, hz, alive = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "true"
rows = list(csv.DictReader(open(f"{out}/samples.csv")))
t0 = int(rows[0]["t"])
procs = [k[: -len("_rss_kb")] for k in rows[0] if k.endswith("_rss_kb")]


def series(p, field):
    return [(int(r["t"]) - t0, float(r[f"{p}_{field}"])) for r in rows if r[f"{p}_{field}"]]


def at(s, second):  # the first sample at or after `second`
    return next((v for t, v in s if t >= second), s[-1][1])


summary = {"samples": len(rows), "seconds": int(rows[-1]["t"]) - t0, "consoleAliveAtEnd": alive, "processes": {}}
for p in procs:
    rss, cpu = series(p, "rss_kb"), series(p, "cpu_ticks")
    if not rss:
        continue
    # CPU per window between restarts is not needed here: nothing restarts in a soak.
    secs = cpu[-1][0] - cpu[0][0] or 1
    summary["processes"][p] = {
        "cpuCores": round((cpu[-1][1] - cpu[0][1]) / hz / secs, 3),
        "rssMiBAt5m": round(at(rss, 300) / 1024, 1),
        "rssMiBEnd": round(rss[-1][1] / 1024, 1),
        "rssMiBPeak": round(max(v for _, v in rss) / 1024, 1),
    }
c = summary["processes"]["console"]
c["rssGrowthFrom5mPercent"] = round(100 * (c["rssMiBEnd"] - c["rssMiBAt5m"]) / c["rssMiBAt5m"], 1)
g = [int(r["console_goroutines"]) for r in rows if r["console_goroutines"]]
summary["consoleGoroutines"] = {"start": g[0], "at5m": at([(int(r["t"]) - t0, int(r["console_goroutines"])) for r in rows if r["console_goroutines"]], 300), "end": g[-1], "max": max(g)}
churn = json.load(open(f"{out}/churn.json"))
summary["churn"] = {k: churn.get(k) for k in ("id", "outcome", "targetRate", "durationSeconds", "lifetimeSeconds",
                                             "achievedCreateRate", "createRatio", "created", "deleted", "errors")}
summary["verdict"] = {
    "consoleRssGrowthUnder10Percent": c["rssGrowthFrom5mPercent"] < 10,
    "consoleGoroutinesFlat": summary["consoleGoroutines"]["end"] <= summary["consoleGoroutines"]["at5m"] + 5,
}
json.dump(summary, open(f"{out}/soak.json", "w"), indent=2)
print(json.dumps(summary, indent=2))

# soak.svg: RSS of each process over the soak, one line each, in MiB.
W, H, L, B = 900, 420, 60, 40
colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"]
tmax = max(summary["seconds"], 1)
vmax = max(p["rssMiBPeak"] for p in summary["processes"].values()) * 1.1
x = lambda t: L + (W - L - 170) * t / tmax
y = lambda v: H - B - (H - B - 20) * v / vmax
svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
       f'<text x="{L}" y="14">RSS (MiB) over {tmax // 60} min of churn {churn.get("targetRate")} pods/s — {html.escape(out)}</text>',
       f'<line x1="{L}" y1="{H - B}" x2="{W - 170}" y2="{H - B}" stroke="#888"/><line x1="{L}" y1="20" x2="{L}" y2="{H - B}" stroke="#888"/>']
for i in range(5):
    v = vmax * i / 4
    svg.append(f'<text x="{L - 6}" y="{y(v) + 4:.0f}" text-anchor="end">{v:.0f}</text>')
for i in range(7):
    t = tmax * i / 6
    svg.append(f'<text x="{x(t):.0f}" y="{H - B + 16}" text-anchor="middle">{t / 60:.0f}m</text>')
for i, p in enumerate(summary["processes"]):
    pts = " ".join(f"{x(t):.1f},{y(v / 1024):.1f}" for t, v in series(p, "rss_kb"))
    col = colors[i % len(colors)]
    svg.append(f'<polyline fill="none" stroke="{col}" stroke-width="1.5" points="{pts}"/>')
    svg.append(f'<text x="{W - 160}" y="{30 + 16 * i}" fill="{col}">{html.escape(p)}</text>')
svg.append("</svg>")
open(f"{out}/soak.svg", "w").write("\n".join(svg))

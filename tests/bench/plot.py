"""Draws throughput and peak RSS against stream size from a results.json of
agent-adaptor-bench (scripts/bench runs it in its own venv with matplotlib).

usage: python plot.py RESULTS.json OUT.png
"""

import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

LABELS = {
    "limit": "limit (raw pipe + serde_json)",
    "limit-stream": "limit, lines handed to another thread",
    "aa-run": "agent-adaptor run()",
    "aa-run-blocking": "agent-adaptor run(), blocking",
    "aa-stream": "agent-adaptor stream()",
    "aa-stream-blocking": "agent-adaptor stream(), blocking",
    "aa-stream-current-thread": "agent-adaptor stream(), current_thread runtime",
    "sdk": "official SDK",
}
STYLE = {
    "limit": dict(color="black", marker="o", linestyle="-"),
    "limit-stream": dict(color="gray", marker="o", linestyle="--"),
    "aa-run": dict(color="tab:blue", marker="s", linestyle="-"),
    "aa-run-blocking": dict(color="tab:blue", marker="s", linestyle=":"),
    "aa-stream": dict(color="tab:green", marker="^", linestyle="-"),
    "aa-stream-blocking": dict(color="tab:green", marker="^", linestyle=":"),
    "aa-stream-current-thread": dict(color="tab:olive", marker="v", linestyle="--"),
    "sdk": dict(color="tab:red", marker="D", linestyle="-"),
}


def main(results_path, out_path):
    with open(results_path) as f:
        results = json.load(f)
    summary = results["summary"]
    kinds = [k for k in ("claude", "codex") if any(s["kind"] == k for s in summary)]
    fig, axes = plt.subplots(2, len(kinds), figsize=(6.5 * len(kinds), 10), squeeze=False)
    for col, kind in enumerate(kinds):
        rows = [s for s in summary if s["kind"] == kind]
        contenders = [c for c in STYLE if any(s["contender"] == c for s in rows)]
        for contender in contenders:
            pts = sorted(
                (s["lines"], s["mb_per_s"], s["rss_mib"])
                for s in rows
                if s["contender"] == contender and s["runs"] > 0
            )
            if not pts:
                continue
            xs = [p[0] for p in pts]
            label = LABELS[contender]
            if contender == "sdk":
                label = "official SDK (claude-agent-sdk / codex-sdk)"
            axes[0][col].plot(xs, [p[1] for p in pts], label=label, **STYLE[contender])
            axes[1][col].plot(xs, [p[2] for p in pts], label=label, **STYLE[contender])
        mb = {s["lines"]: s["bytes"] / 1e6 for s in rows}
        sizes = sorted(mb)
        for row, ylabel in enumerate(("throughput, MB of stream / wall s", "peak RSS of the consumer, MiB")):
            ax = axes[row][col]
            ax.set_xscale("log")
            ax.set_xticks(sizes)
            ax.set_xticklabels([f"{n // 1000}k\n{mb[n]:.0f} MB" for n in sizes])
            ax.minorticks_off()
            ax.set_ylim(bottom=0)
            ax.set_ylabel(ylabel)
            ax.grid(True, alpha=0.3)
            ax.set_xlabel("stream size (lines, bytes)")
        axes[0][col].set_title(f"{kind}: throughput (higher is better)")
        axes[1][col].set_title(f"{kind}: peak RSS (lower is better)")
    m = results["machine"]
    fig.suptitle(
        f"agent-adaptor vs official SDKs vs the raw pipe — medians of {results['plan']['reps']} "
        f"interleaved runs; {m['cpus']} × {m['cpu']}",
        fontsize=10,
    )
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=9, frameon=False)
    fig.tight_layout(rect=(0, 0.07, 1, 0.97))
    fig.savefig(out_path, dpi=110)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])

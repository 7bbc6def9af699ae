#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Plot bytes per second against size for keel's element-wise kernels, the
STREAM triad and the scalar loops, from keel_benchmarks' JSON output.

    build/benchmarks/keel_benchmarks --benchmark_filter='BM_(triad_baseline|add_f32|addcmul_f32|cast_f32)' \
        --benchmark_out=ops.json --benchmark_out_format=json
    python3 benchmarks/plot_ops.py ops.json ops.png

Needs only Python 3's standard library and gnuplot (Debian: gnuplot-nox).
"""
import json
import os
import re
import subprocess
import sys
import tempfile

SERIES = [  # (benchmark prefix, legend, line style)
    ("BM_triad_baseline", "STREAM triad (baseline)", "lw 3 dt 2 lc rgb 'black'"),
    ("BM_add_f32_scalar_loop", "add scalar loop (baseline)", "lw 2 dt 3 lc rgb 'gray40'"),
    ("BM_add_f32_scalar_loop_native", "add scalar loop, -march=native", "lw 1 dt 3 lc rgb 'gray20'"),
    ("BM_cast_f32_f16_scalar_loop", "f32->f16 scalar loop (baseline)", "lw 2 dt 3 lc rgb 'gray70'"),
    ("BM_add_f32_eigen", "add Eigen", "lw 1 dt 4 lc rgb 'orange'"),
    ("BM_add_f32", "keel add", "lw 2 lc rgb 'blue'"),
    ("BM_addcmul_f32", "keel addcmul", "lw 2 lc rgb 'red'"),
    ("BM_cast_f32_f16", "keel cast f32->f16", "lw 2 lc rgb 'dark-green'"),
    ("BM_cast_f32_bf16", "keel cast f32->bf16", "lw 2 lc rgb 'purple'"),
]


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        runs = json.load(f)["benchmarks"]
    # With --benchmark_repetitions the medians are plotted (each size once);
    # without, the single iteration runs.
    medians = any(run.get("aggregate_name") == "median" for run in runs)
    series = {prefix: [] for prefix, _, _ in SERIES}
    target = ""
    for run in runs:
        if "bytes_per_second" not in run:
            continue
        if medians != (run.get("run_type") == "aggregate" and run.get("aggregate_name") == "median"):
            continue
        m = re.fullmatch(r"(BM_[A-Za-z0-9_]+)/(\d+)", run.get("run_name", run["name"]))
        if m and m.group(1) in series:
            series[m.group(1)].append((int(m.group(2)), run["bytes_per_second"] / 1e9))
            target = run.get("label", target) if m.group(1) == "BM_add_f32" else target
    present = [(p, t, s) for p, t, s in SERIES if series[p]]
    if not present:
        sys.exit("no element-wise benchmarks with byte counts in " + sys.argv[1])
    with tempfile.TemporaryDirectory() as tmp:
        plots = []
        for prefix, title, style in present:
            path = os.path.join(tmp, prefix + ".dat")
            with open(path, "w") as out:
                for n, gbs in sorted(series[prefix]):
                    out.write(f"{n} {gbs}\n")
            plots.append(f"'{path}' using 1:2 with linespoints {style} title '{title}'")
        script = "\n".join([
            "set terminal pngcairo size 1000,640 font ',11'",
            f"set output '{sys.argv[2]}'",
            f"set title 'keel::ops element-wise kernels, 1 thread, float32 ({target})'",
            "set logscale x 2",
            "set format x '%.0s%c'",
            "set xlabel 'elements per operand'",
            "set ylabel 'GB/s (inputs read once + output written once)'",
            "set grid",
            "set key outside right",
            "plot " + ", \\\n     ".join(plots),
        ])
        subprocess.run(["gnuplot"], input=script, text=True, check=True)
    print("wrote", sys.argv[2])


if __name__ == "__main__":
    main()

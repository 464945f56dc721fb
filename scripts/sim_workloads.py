"""Shared by scripts/sim-tune, scripts/sim-seeds and scripts/sim-suite: the scored simulator
workloads of examples/sim/workloads.tsv (also read by scripts/sim-compare), where things are
and which gpuscale binary to run. (The workload suite's own spec is
examples/sim/workloads/workloads.json, read by scripts/sim-workloads.)"""
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRACES = os.path.join(ROOT, "data", "traces")


def read_workloads():
    """workload -> (trace file name, rate scale)."""
    workloads = {}
    with open(os.path.join(ROOT, "examples", "sim", "workloads.tsv")) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                name, trace, rate = line.split()
                workloads[name] = (trace, float(rate) if "." in rate else int(rate))
    return workloads


def gpuscale_binary():
    """$GPUSCALE_BIN, else build/gpuscale."""
    return os.environ.get("GPUSCALE_BIN", os.path.join(ROOT, "build", "gpuscale"))

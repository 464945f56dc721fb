"""Shared by scripts/sim-tune and scripts/sim-seeds: the scored simulator workloads of
examples/sim/workloads.tsv (also read by scripts/sim-compare) and where things are."""
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

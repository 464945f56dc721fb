"""Helpers for the live benchmark scripts (bench-prefix-routing, bench-overload): a free port,
an HTTP GET, waiting for a `gpuscale serve` to reach a state, and stopping it with every
process it started. Imported from scripts/ (the scripts' own directory is on sys.path)."""
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url):
    with urllib.request.urlopen(url, timeout=5) as r:
        return r.read().decode()


def ready_replicas(api, service):
    """The daemon's ready replicas of `service` (each with its "port")."""
    return [r for r in json.loads(get(f"http://127.0.0.1:{api}/v1/services/{service}/replicas"))
            ["replicas"] if r["phase"] == "ready"]


def wait_for(script, what, predicate, timeout, daemon):
    """Polls predicate() until true; exits naming `what` after `timeout` s or when the daemon
    exits. Errors a poll raises (not up yet) count as false."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if daemon.poll() is not None:
            sys.exit(f"{script}: gpuscale serve exited ({daemon.returncode}); "
                     "see its log (--keep DIR)")
        try:
            if predicate():
                return
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.5)
    sys.exit(f"{script}: {what} not within {timeout} s")


def start_daemon(binary, config, log_path):
    """`gpuscale serve --config config` in its own process group (stop_daemon ends it and
    the replicas it spawned), logging to log_path. Returns (process, log file)."""
    log = open(log_path, "w")
    daemon = subprocess.Popen([binary, "serve", "--config", config], stdout=log, stderr=log,
                              start_new_session=True)
    return daemon, log


def stop_daemon(daemon, log):
    os.killpg(daemon.pid, signal.SIGTERM)
    try:
        daemon.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(daemon.pid, signal.SIGKILL)
        daemon.wait()
    log.close()

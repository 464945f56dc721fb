#!/usr/bin/env python3
"""Tests of scripts/sim-workloads and scripts/sim-suite, run as a user runs them (CTest:
scripts.sim_workloads and scripts.sim_suite, tests/CMakeLists.txt). Tiny specs keep each
class under ~15 s.

  python3 scripts/sim_suite_test.py [GeneratorTest | SuiteTest]
  GPUSCALE_BIN  the gpuscale binary SuiteTest runs (default build/gpuscale)
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

SCRIPTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(SCRIPTS)
GENERATOR = os.path.join(SCRIPTS, "sim-workloads")
SUITE = os.path.join(SCRIPTS, "sim-suite")

# Every shape, shrunk to a few minutes at a few requests per second.
TINY_SPEC = {"workloads": [
    {"name": "diurnal", "shape": "diurnal_bursts", "seed": 1,
     "params": {"duration_s": 300, "low_rps": 2, "peak_rps": 8, "burst_every_s": 60,
                "burst_s": 10, "burst_first_s": 20},
     "jitter": {"peak_rps": 0.3, "burst_every_s": 0.3}},
    {"name": "flash", "shape": "flash_crowd", "seed": 1,
     "params": {"duration_s": 300, "base_rps": 3, "step_at_s": 100, "hold_s": 100},
     "jitter": {"factor": 0.25, "hold_s": 0.3}},
    {"name": "mix", "shape": "mix_shift", "seed": 1,
     "params": {"rate_rps": 4, "phase_chat_s": 100, "phase_long_prompt_s": 100,
                "phase_long_output_s": 100, "transition_s": 20}},
    {"name": "silence", "shape": "silence_then_load", "seed": 1,
     "params": {"silence_s": 200, "silence_rps": 0.2, "ramp_s": 30, "load_s": 100,
                "load_rps": 6}},
    {"name": "tail", "shape": "heavy_tail_outputs", "seed": 1,
     "params": {"duration_s": 300, "base_rps": 4, "period_s": 120}},
]}


def run(args, **kwargs):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, **kwargs)


def write_json(path, value):
    with open(path, "w") as f:
        json.dump(value, f)
    return path


def read_bytes(folder):
    files = {}
    for name in sorted(os.listdir(folder)):
        if name.endswith(".csv"):
            with open(os.path.join(folder, name), "rb") as f:
                files[name] = f.read()
    return files


class GeneratorTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="sim-workloads-test-")
        self.spec = write_json(os.path.join(self.tmp, "spec.json"), TINY_SPEC)

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def generate(self, out, *extra):
        result = run([GENERATOR, "--spec", self.spec, "--out", os.path.join(self.tmp, out),
                      *extra])
        self.assertEqual(result.returncode, 0, result.stderr)
        return read_bytes(os.path.join(self.tmp, out))

    def test_same_seed_gives_byte_identical_files(self):
        first, second = self.generate("a"), self.generate("b")
        self.assertEqual(sorted(first), [f"{e['name']}.csv" for e in
                                         sorted(TINY_SPEC["workloads"], key=lambda e: e["name"])])
        self.assertEqual(first, second)

    def test_another_seed_gives_other_files(self):
        ours, other = self.generate("a"), self.generate("b", "--seed", "2")
        for name in ours:
            self.assertNotEqual(ours[name], other[name], name)

    def test_every_file_parses(self):
        for name, data in self.generate("a").items():
            lines = data.decode().splitlines()
            self.assertEqual(lines[0], "arrival_s,input_tokens,output_tokens", name)
            self.assertGreater(len(lines), 100, name)
            previous = 0.0
            for line in lines[1:]:
                arrival, prompt, output = line.split(",")
                self.assertGreaterEqual(float(arrival), previous, f"{name}: {line}")
                previous = float(arrival)
                self.assertTrue(1 <= int(prompt) <= 8192, f"{name}: {line}")
                self.assertTrue(1 <= int(output) <= 4096, f"{name}: {line}")

    def test_up_to_date_files_are_kept(self):
        self.generate("a")
        path = os.path.join(self.tmp, "a", "flash.csv")
        os.utime(path, (0, 0))
        result = run([GENERATOR, "--spec", self.spec, "--out", os.path.join(self.tmp, "a")])
        self.assertIn("up to date", result.stdout)
        self.assertEqual(os.stat(path).st_mtime, 0)

    def test_spec_mistakes_name_the_field(self):
        spec = json.loads(json.dumps(TINY_SPEC))
        spec["workloads"][1]["params"]["facto"] = 4
        result = run([GENERATOR, "--spec", write_json(self.spec, spec), "--out", self.tmp])
        self.assertEqual(result.returncode, 2)
        self.assertIn("workloads[1] (flash): params.facto: not a parameter of flash_crowd",
                      result.stderr)
        self.assertNotIn("Traceback", result.stderr)

    def test_the_committed_spec_is_valid(self):
        result = run([GENERATOR, "--list"])
        self.assertEqual(result.returncode, 0, result.stderr)
        for name in ("diurnal_bursts", "flash_crowd", "mix_shift", "silence_then_load",
                     "heavy_tail_outputs", "conv_x20", "code_x40", "mooncake_x1"):
            self.assertIn(name, result.stdout)


class SuiteTest(unittest.TestCase):
    """Two runs on one tiny generated workload with two of the general configs."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="sim-suite-test-")
        spec = {"workloads": [dict(TINY_SPEC["workloads"][1], name="flash")]}
        self.spec = write_json(os.path.join(self.tmp, "spec.json"), spec)
        self.configs = os.path.join(self.tmp, "configs")
        os.mkdir(self.configs)
        general = os.path.join(ROOT, "examples", "sim", "general")
        for name in ("hpa.yaml", "slo.yaml"):
            with open(os.path.join(general, name)) as f:
                text = f.read()
            # A relative profile path names a file beside the config's own folder.
            text = text.replace("profile: ../", "profile: " + general + "/../")
            with open(os.path.join(self.configs, name), "w") as f:
                f.write(text)

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def suite(self, *extra):
        result = run([SUITE, "--spec", self.spec, "--configs", self.configs, "--workloads-dir",
                      os.path.join(self.tmp, "workloads"), "--out",
                      os.path.join(self.tmp, "out"), "-j", "1", *extra])
        self.assertEqual(result.returncode, 0, result.stderr)
        return result.stdout

    def test_two_runs_print_the_same_table(self):
        first, second = self.suite(), self.suite()
        self.assertEqual(first, second)
        row = next(line for line in first.splitlines() if line.startswith("flash "))
        self.assertRegex(row, r"(PASS|FAIL|n/a)$")
        self.assertIn("slo: PASS on ", first)

    def test_json_carries_the_verdict(self):
        report = json.loads(self.suite("-o", "json"))
        workload = report["workloads"][0]
        self.assertEqual(workload["name"], "flash")
        self.assertEqual(sorted(workload["policies"]), ["hpa", "slo"])
        self.assertIn(workload["verdict"], ("PASS", "FAIL", "n/a"))

    def test_a_missing_binary_is_named(self):
        result = subprocess.run(
            [sys.executable, SUITE, "--spec", self.spec, "--configs", self.configs],
            capture_output=True, text=True,
            env=dict(os.environ, GPUSCALE_BIN=os.path.join(self.tmp, "nowhere")))
        self.assertEqual(result.returncode, 2)
        self.assertIn("nowhere: no gpuscale binary there", result.stderr)
        self.assertNotIn("Traceback", result.stderr)


if __name__ == "__main__":
    unittest.main()

#!/usr/bin/env python3
"""Tests of scripts/sim-workloads and scripts/sim-suite, run as a user runs them or, for the
rules underneath (ranges, verdicts, aggregates), through their functions (CTest:
scripts.sim_workloads, scripts.sim_heldout, scripts.sim_suite_verdict and scripts.sim_suite,
tests/CMakeLists.txt). Tiny specs keep each class under ~30 s.

  python3 scripts/sim_suite_test.py [GeneratorTest RangesTest | HeldoutSpecTest |
                                     VerdictTest | SuiteTest]
  GPUSCALE_BIN  the gpuscale binary SuiteTest runs (default build/gpuscale)
"""
import hashlib
import importlib.machinery
import importlib.util
import json
import math
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


def load_script(path):
    """A script of scripts/ (no .py in its name) as a module."""
    name = "script_" + os.path.basename(path).replace("-", "_")
    loader = importlib.machinery.SourceFileLoader(name, path)
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(name, loader))
    loader.exec_module(module)
    return module


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


# Families: flash crowds and diurnal days whose parameters each seed draws.
RANGED_SPEC = {"workloads": [
    {"name": "flash", "shape": "flash_crowd", "seed": 1,
     "params": {"duration_s": 400, "step_at_s": 100, "hold_s": 100},
     "ranges": {"factor": [2, 4], "ramp_up_s": [0, 250]},
     "log_ranges": {"base_rps": [2, 6], "ramp_down_s": [1, 10000]},
     "jitter": {"hold_s": 0.3}},
    {"name": "diurnal", "shape": "diurnal_bursts", "seed": 1,
     "params": {"duration_s": 300, "burst_every_s": 60, "burst_s": 10, "burst_first_s": 20},
     "ranges": {"peak_at": [0.2, 0.8]},
     "log_ranges": {"peak_rps": [4, 12], "low_fraction": [0.05, 0.5],
                    "prompt_mean": [300, 3000]}},
]}


class RangesTest(unittest.TestCase):
    """"ranges" and "log_ranges": what a seed draws, and the spec's checks."""

    @classmethod
    def setUpClass(cls):
        cls.gen = load_script(GENERATOR)

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="sim-workloads-ranges-")
        self.spec = write_json(os.path.join(self.tmp, "spec.json"), RANGED_SPEC)

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def entries(self, spec=None):
        path = self.spec if spec is None else write_json(os.path.join(self.tmp, "s.json"), spec)
        return {e["name"]: e for e in self.gen.load_spec(path)}

    def test_draws_stay_in_their_ranges_uniform_or_log_uniform(self):
        flash = self.entries()["flash"]
        draws = [self.gen.effective_params(flash, seed) for seed in range(1, 401)]
        for field in ("ranges", "log_ranges"):
            for key, (lo, hi) in RANGED_SPEC["workloads"][0][field].items():
                for seed, p in enumerate(draws, 1):
                    self.assertTrue(lo <= p[key] <= hi, f"seed {seed}: {key} {p[key]}")
                self.assertGreater(len({p[key] for p in draws}), 390, key)
        # Uniform on [0, 250]: ~10 % below 25. Log-uniform on [1, 10000]: ~50 % below 100
        # (uniform would put 1 % there), ~25 % below 10.
        below = lambda key, x: sum(p[key] < x for p in draws) / len(draws)
        self.assertAlmostEqual(below("ramp_up_s", 25), 0.10, delta=0.05)
        self.assertAlmostEqual(below("ramp_down_s", 100), 0.50, delta=0.08)
        self.assertAlmostEqual(below("ramp_down_s", 10), 0.25, delta=0.07)
        # Parameters nobody draws keep their value; jitter still moves its own.
        self.assertTrue(all(p["step_at_s"] == 100 for p in draws))
        self.assertTrue(all(70 <= p["hold_s"] <= 130 for p in draws))
        self.assertGreater(len({p["hold_s"] for p in draws}), 390)

    def test_the_draw_does_not_depend_on_the_order_of_the_spec(self):
        spec = json.loads(json.dumps(RANGED_SPEC))
        for entry in spec["workloads"]:
            for field in ("ranges", "log_ranges"):
                entry[field] = dict(reversed(list(entry[field].items())))
        ours, theirs = self.entries(), self.entries(spec)
        for name in ours:
            for seed in range(1, 21):
                self.assertEqual(self.gen.effective_params(ours[name], seed),
                                 self.gen.effective_params(theirs[name], seed))

    def test_a_low_fraction_keeps_the_low_below_the_drawn_peak(self):
        diurnal = self.entries()["diurnal"]
        for seed in range(1, 201):
            p = self.gen.effective_params(diurnal, seed)
            self.assertTrue(0.05 <= p["low_fraction"] <= 0.5)
            self.assertAlmostEqual(p["low_rps"], p["peak_rps"] * p["low_fraction"])
            self.assertLess(p["low_rps"], p["peak_rps"])

    def test_same_seed_gives_the_same_file_another_seed_other_parameters(self):
        def generate(out, seed):
            folder = os.path.join(self.tmp, out)
            result = run([GENERATOR, "--spec", self.spec, "--out", folder, "--seed", str(seed)])
            self.assertEqual(result.returncode, 0, result.stderr)
            metas = {}
            for name in ("flash", "diurnal"):
                with open(os.path.join(folder, name + ".meta.json")) as f:
                    metas[name] = json.load(f)["params"]
            return read_bytes(folder), metas
        (files_a, params_a), (files_b, params_b) = generate("a", 3), generate("b", 3)
        files_c, params_c = generate("c", 4)
        self.assertEqual(files_a, files_b)
        self.assertEqual(params_a, params_b)
        for entry in RANGED_SPEC["workloads"]:
            name = entry["name"]
            self.assertNotEqual(files_a[name + ".csv"], files_c[name + ".csv"], name)
            for key in [*entry["ranges"], *entry["log_ranges"]]:
                self.assertNotEqual(params_a[name][key], params_c[name][key], f"{name}.{key}")

    def test_entries_without_ranges_make_the_files_they_made_before(self):
        # sha256 of TINY_SPEC's files at --seed 5, as the script made them before ranges
        # existed (main at a7a90e1): ranges must not move any other entry's draws.
        before = {"diurnal.csv": "bc6c6ff5647c08ab", "flash.csv": "6163ca73e0e2eede",
                  "mix.csv": "cf8d05f4d2409f20", "silence.csv": "70f29938b503e299",
                  "tail.csv": "2801916110517040"}
        spec = write_json(os.path.join(self.tmp, "tiny.json"), TINY_SPEC)
        out = os.path.join(self.tmp, "tiny")
        result = run([GENERATOR, "--spec", spec, "--out", out, "--seed", "5"])
        self.assertEqual(result.returncode, 0, result.stderr)
        digests = {name: hashlib.sha256(data).hexdigest()[:16]
                   for name, data in read_bytes(out).items()}
        self.assertEqual(digests, before)

    def test_range_mistakes_name_the_file_the_entry_and_the_field(self):
        def mistake(change, expected):
            spec = json.loads(json.dumps(RANGED_SPEC))
            change(spec["workloads"][0])
            path = write_json(os.path.join(self.tmp, "bad.json"), spec)
            with self.assertRaises(self.gen.SpecError) as caught:
                self.gen.load_spec(path)
            message = str(caught.exception)
            self.assertIn("bad.json: workloads[0] (flash): ", message)
            self.assertIn(expected, message)
        mistake(lambda e: e["ranges"].update(factor=[4, 2]), "ranges.factor: lo 4 > hi 2")
        mistake(lambda e: e["ranges"].update(factor=[2, "4"]),
                "ranges.factor: expected [lo, hi], two numbers, got [2, '4']")
        mistake(lambda e: e["log_ranges"].update(base_rps=5),
                "log_ranges.base_rps: expected [lo, hi]")
        mistake(lambda e: e["ranges"].update(facto=[2, 4]),
                "ranges.facto: not a parameter of flash_crowd")
        mistake(lambda e: e["ranges"].update(hold_s=[50, 200]) or e["params"].pop("hold_s"),
                "jitter.hold_s: hold_s is also in ranges")
        mistake(lambda e: e["ranges"].update(step_at_s=[50, 200]),
                "ranges.step_at_s: step_at_s is also in params")
        mistake(lambda e: e["log_ranges"].update(factor=[2, 4]),
                "log_ranges.factor: factor is also in ranges")
        mistake(lambda e: e["ranges"].update(factor=[0.5, 4]),
                "ranges.factor: expected a number in [1, inf], got 0.5")
        mistake(lambda e: e["ranges"].update(base_rps=[0, 4]) or e["log_ranges"].pop("base_rps"),
                "ranges.base_rps: expected a number > 0, got 0")
        mistake(lambda e: e["log_ranges"].update(ramp_down_s=[0, 60]),
                "log_ranges.ramp_down_s: expected lo > 0 for a log-uniform draw")
        # A relation the extremes break: the crowd could start after the trace ends.
        mistake(lambda e: e["ranges"].update(ramp_up_s=[0, 400]),
                "with its ranges and jitter: step_at_s + ramp_up_s can exceed duration_s "
                "(500 > 400)")
        diurnal = RANGED_SPEC["workloads"][1]
        spec = {"workloads": [dict(diurnal, name="flash", params=dict(diurnal["params"],
                                                                      low_rps=3))]}
        path = write_json(os.path.join(self.tmp, "bad.json"), spec)
        with self.assertRaises(self.gen.SpecError) as caught:
            self.gen.load_spec(path)
        self.assertIn("bad.json: workloads[0] (flash): params.low_rps: set by low_fraction",
                      str(caught.exception))

    def test_the_command_reports_a_range_mistake_without_a_traceback(self):
        spec = json.loads(json.dumps(RANGED_SPEC))
        spec["workloads"][1]["ranges"]["burst_s"] = [5, 90]
        result = run([GENERATOR, "--spec", write_json(self.spec, spec), "--out", self.tmp])
        self.assertEqual(result.returncode, 2)
        self.assertIn("spec.json: workloads[1] (diurnal): ranges.burst_s: burst_s is also in "
                      "params", result.stderr)
        self.assertNotIn("Traceback", result.stderr)
        del spec["workloads"][1]["params"]["burst_s"]
        result = run([GENERATOR, "--spec", write_json(self.spec, spec), "--out", self.tmp])
        self.assertEqual(result.returncode, 2)
        self.assertIn("spec.json: workloads[1] (diurnal): with its ranges and jitter: burst_s "
                      "can exceed burst_every_s (90 > 60)", result.stderr)


HELDOUT = os.path.join(ROOT, "examples", "sim", "workloads", "heldout.json")


class HeldoutSpecTest(unittest.TestCase):
    """examples/sim/workloads/heldout.json: every family, a few seeds, valid files."""

    def test_every_entry_generates_a_valid_csv_for_a_few_seeds(self):
        gen = load_script(GENERATOR)
        entries = gen.load_spec(HELDOUT)
        generated = [e for e in entries if e["kind"] == "generated"]
        self.assertEqual(sorted(e["shape"] for e in generated), sorted(gen.SHAPES))
        self.assertEqual({e["family"] for e in entries if e["kind"] == "trace"},
                         {"conv", "code", "mooncake"})
        for e in generated:
            self.assertTrue(e["ranges"] or e["log_ranges"], e["name"])
            self.assertTrue(e["about"], e["name"])
        # The ramps of the crowd and of the load after silence straddle the cold start.
        for e in generated:
            key = {"flash_crowd": "ramp_up_s", "silence_then_load": "ramp_s"}.get(e["shape"])
            if key:
                lo, hi = e["log_ranges"][key]
                self.assertTrue(lo < 60 < hi, e["name"])
        with tempfile.TemporaryDirectory(prefix="sim-heldout-test-") as tmp:
            for seed in (1, 2, 3):
                out = os.path.join(tmp, str(seed))
                result = run([GENERATOR, "--spec", HELDOUT, "--out", out, "--seed", str(seed)])
                self.assertEqual(result.returncode, 0, result.stderr)
                for e in generated:
                    where = f"{e['name']} seed {seed}"
                    with open(gen.csv_path(out, e["name"])) as f:
                        self.assertEqual(f.readline().rstrip("\n"), gen.CSV_HEADER, where)
                        previous, count = 0.0, 0
                        for line in f:
                            arrival, prompt, output = line.split(",")
                            self.assertGreaterEqual(float(arrival), previous, where)
                            previous = float(arrival)
                            self.assertTrue(1 <= int(prompt) <= 8192, where)
                            self.assertTrue(1 <= int(output) <= 4096, where)
                            count += 1
                    self.assertGreater(count, 10000, where)
                    self.assertTrue(25 * 60 < previous <= 90 * 60, f"{where}: {previous} s")


def hand_record(name="w", seed=1, family="fam", slo=None, static_meets=True, shape=None,
                ramp=None, cold_start=60, others=None):
    """A run's record as scripts/sim-suite's summarize makes it, by hand: slo (and others) are
    (attainment, cost_vs_static, dominating fleet's replicas or None); the static fleet of 10
    replicas costs 10 GPU-hours."""
    def policy(attainment, cost, dominated):
        return {"attainment": attainment, "gpu_hours": 10 * cost if cost else 5.0,
                "meets_target": attainment >= 0.99,
                "cost_vs_static": cost if static_meets else None,
                "dominated_by": None if dominated is None else {
                    "replicas": dominated, "gpu_hours": dominated, "attainment": 0.999}}
    record = {"name": name, "seed": seed, "family": family, "kind": "generated",
              "slo_target": 0.99, "cold_start_seconds": cold_start, "initial_replicas": 1,
              "policies": {}, "reactive": None, "oracle_gpu_hours": None,
              "static_fleet": {"replicas": 10, "gpu_hours": 10.0,
                               "attainment": 0.995 if static_meets else 0.95,
                               "meets_target": static_meets}}
    if shape:
        record["shape"], record["params"] = shape, {"ramp_s": ramp}
    if slo:
        record["policies"]["slo"] = policy(*slo)
    for config, figures in (others or {}).items():
        record["policies"][config] = policy(*figures)
    return record


class VerdictTest(unittest.TestCase):
    """scripts/sim-suite's rules on hand-made records: issue 43's verdict, the aggregate
    per family, the headline, and the seed sets."""

    @classmethod
    def setUpClass(cls):
        cls.suite = load_script(SUITE)

    def judge(self, **kwargs):
        record = hand_record(**kwargs)
        record["verdict"], record["reason"], record["rule"] = self.suite.verdict(record)
        return record

    def test_dominated_by_a_static_fleet_fails(self):
        r = self.judge(slo=(0.98, 1.2, 9))
        self.assertEqual(r["verdict"], "FAIL")
        self.assertIn("dominated by a static fleet of 9 replicas", r["reason"])
        # Even where the target is out of reach, or the step outruns the cold start.
        self.assertEqual(self.judge(slo=(0.9, None, 9), static_meets=False)["verdict"], "FAIL")
        r = self.judge(slo=(0.98, 1.2, 9), shape="silence_then_load", ramp=10)
        self.assertEqual((r["verdict"], r["rule"]), ("FAIL", None))

    def test_costing_more_than_the_static_fleet_fails(self):
        r = self.judge(slo=(0.999, 1.05, None))
        self.assertEqual(r["verdict"], "FAIL")
        self.assertIn("costs 1.050x the static fleet of 10", r["reason"])
        self.assertEqual(self.judge(slo=(0.999, 1.0, None))["verdict"], "PASS")
        self.assertEqual(self.judge(slo=(0.999, 0.8, None))["verdict"], "PASS")

    def test_missing_the_target_fails_where_the_static_fleet_meets_it(self):
        r = self.judge(slo=(0.985, 0.7, None))
        self.assertEqual(r["verdict"], "FAIL")
        self.assertIn("attains 98.500 % < 99.00 %", r["reason"])

    def test_a_step_faster_than_the_cold_start_needs_only_not_dominated(self):
        r = self.judge(slo=(0.95, 1.4, None), shape="silence_then_load", ramp=30)
        self.assertEqual((r["verdict"], r["rule"]), ("PASS", self.suite.STEP_RULE))
        self.assertEqual(self.suite.verdict_text(r),
                         "PASS (step faster than cold start: not dominated)")
        self.assertIn("ramp 30 s < cold start 60 s", r["reason"])
        # A ramp as long as the cold start, or another shape: the plain rule.
        for kwargs in ({"shape": "silence_then_load", "ramp": 60},
                       {"shape": "silence_then_load", "ramp": 30, "cold_start": 20},
                       {"shape": "flash_crowd", "ramp": 30}):
            r = self.judge(slo=(0.95, 1.4, None), **kwargs)
            self.assertEqual((r["verdict"], r["rule"]), ("FAIL", None), kwargs)

    def test_a_target_out_of_reach_is_not_scored(self):
        r = self.judge(slo=(0.9, None, None), static_meets=False)
        self.assertEqual(r["verdict"], "n/a")
        self.assertIn("target out of reach: 10 replicas attain 95.00 %", r["reason"])
        self.assertEqual(self.judge(others={"hpa": (0.9, 1.0, None)})["verdict"], "-")

    def test_the_aggregate_per_family_and_the_headline(self):
        records = [
            self.judge(name="a", seed=1, slo=(0.995, 0.5, None), others={"hpa": (0.9, 3, 10)}),
            self.judge(name="a", seed=2, slo=(0.999, 2.0, None), others={"hpa": (0.995, 4, 12)}),
            self.judge(name="a", seed=3, slo=(0.98, 0.6, None), others={"hpa": (0.8, 2, 10)}),
            self.judge(name="a", seed=4, slo=(0.9, None, 10), static_meets=False,
                       others={"hpa": (0.9, None, None)}),
            self.judge(name="b", seed=1, family="other", slo=(0.999, 0.8, None),
                       others={"hpa": (0.999, 1.5, None)}),
        ]
        rows = {(r["family"], r["config"]): r for r in self.suite.aggregate(records)}
        self.assertEqual(list(rows), [("fam", "slo"), ("fam", "hpa"), ("other", "slo"),
                                      ("other", "hpa"), ("all", "slo"), ("all", "hpa")])
        slo = rows["fam", "slo"]
        self.assertEqual((slo["runs"], slo["dominated"], slo["static_meets"],
                          slo["static_only"], slo["both_meet"]), (4, 1, 3, 1, 2))
        self.assertAlmostEqual(slo["geomean_cost_vs_static"], 1.0)  # sqrt(0.5 x 2.0)
        self.assertEqual(slo["worst_cost_vs_static"], 2.0)
        self.assertEqual(slo["verdicts"], {"PASS": 1, "FAIL": 3, "n/a": 0})
        hpa = rows["fam", "hpa"]
        self.assertEqual((hpa["dominated"], hpa["static_only"], hpa["both_meet"]), (3, 2, 1))
        self.assertAlmostEqual(hpa["geomean_cost_vs_static"], 4.0)
        self.assertNotIn("verdicts", hpa)
        every = rows["all", "slo"]
        self.assertEqual((every["runs"], every["both_meet"]), (5, 3))
        self.assertAlmostEqual(every["geomean_cost_vs_static"], 0.8 ** (1 / 3))
        line, figures = self.suite.summary_line(records)
        self.assertEqual((figures["runs"], figures["not_dominated"], figures["static_meets"],
                          figures["meets_at_most_static"], figures["both_meet"]),
                         (5, 4, 4, 2, 3))
        self.assertEqual(figures["failed"], ["a seed 2", "a seed 3", "a seed 4"])
        self.assertTrue(line.startswith(
            "slo: not dominated on 4 of 5 runs; meets the target at <= 1.0x static on 2 of 4 "
            "runs where static meets it; geomean cost_vs_static 0.928 over the 3 runs where "
            "both meet it (stretch goal 0.85); PASS on 2 of 5 scored runs"), line)

    def test_train_and_test_seeds_are_disjoint_and_seeds_select_within_them(self):
        suite = self.suite
        self.assertEqual(list(suite.TRAIN_SEEDS), list(range(1, 101)))
        self.assertEqual(list(suite.TEST_SEEDS), list(range(1001, 1101)))
        self.assertFalse(set(suite.TRAIN_SEEDS) & set(suite.TEST_SEEDS))
        args = suite.parse_args(["--train"])
        self.assertEqual((args.seed_list, args.spec, args.split),
                         (list(range(1, 101)), suite.HELDOUT_SPEC, "train"))
        args = suite.parse_args(["--test", "--seeds", "1001-1003,1010"])
        self.assertEqual(args.seed_list, [1001, 1002, 1003, 1010])
        self.assertEqual(suite.parse_args(["--seeds", "5,1-2"]).seed_list, [1, 2, 5])
        self.assertEqual(suite.parse_args(["--seed", "7"]).seed_list, [7])
        self.assertIsNone(suite.parse_args([]).seed_list)
        self.assertEqual(suite.parse_args(["--train", "--spec", "x.json"]).spec, "x.json")
        for bad in (["--train", "--seeds", "100-101"], ["--test", "--seeds", "5"],
                    ["--train", "--test"], ["--train", "--seed", "3"], ["--seeds", "3-1"],
                    ["--seeds", "a"]):
            with self.assertRaises(SystemExit, msg=bad), open(os.devnull, "w") as null:
                stderr, sys.stderr = sys.stderr, null
                try:
                    suite.parse_args(bad)
                finally:
                    sys.stderr = stderr

    def test_the_cold_start_comes_from_the_config(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "slo.yaml")
            with open(path, "w") as f:
                f.write("service:\n  name: x\n  cold_start_seconds: 45\npolicy: {family: slo}\n")
            self.assertEqual(self.suite.cold_start_seconds(path), 45)
            with open(path, "w") as f:
                f.write("service:\n  name: x\npolicy: {family: slo}\n")
            self.assertEqual(self.suite.cold_start_seconds(path), 60)


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
        self.assertRegex(row, r"^flash +1 .*(PASS|FAIL|n/a)$")
        self.assertIn("slo: not dominated on ", first)
        self.assertNotIn("per family and config", first)  # one seed: no aggregate

    def test_json_carries_the_frontier_of_every_config_and_the_verdict(self):
        report = json.loads(self.suite("-o", "json"))
        workload = report["workloads"][0]
        self.assertEqual((workload["name"], workload["seed"], workload["family"]),
                         ("flash", 1, "flash_crowd"))
        self.assertEqual(sorted(workload["policies"]), ["hpa", "slo"])
        for name, policy in workload["policies"].items():
            self.assertIn("cost_vs_static", policy, name)
            self.assertIn("dominated_by", policy, name)
        self.assertIn(workload["verdict"], ("PASS", "FAIL", "n/a"))
        self.assertIn(workload["issue23_verdict"], ("PASS", "FAIL", "n/a"))
        self.assertEqual(workload["params"]["base_rps"], 3)

    def test_several_seeds_run_each_workload_once_per_seed_and_aggregate(self):
        report = json.loads(self.suite("--seeds", "1-2", "-o", "json"))
        self.assertEqual([(w["name"], w["seed"]) for w in report["workloads"]],
                         [("flash", 1), ("flash", 2)])
        first, second = (w["params"] for w in report["workloads"])
        self.assertNotEqual(first["factor"], second["factor"])  # the jitter of each seed
        for seed in (1, 2):
            folder = os.path.join(self.tmp, "workloads", f"seed-{seed}")
            self.assertTrue(os.path.isfile(os.path.join(folder, "flash.csv")), folder)
            self.assertTrue(os.path.isfile(os.path.join(self.tmp, "out", f"seed-{seed}",
                                                        "flash.json")))
        rows = {(r["family"], r["config"]): r for r in report["aggregate"]}
        self.assertEqual(sorted(rows), [("all", "hpa"), ("all", "slo"),
                                        ("flash_crowd", "hpa"), ("flash_crowd", "slo")])
        self.assertEqual(rows["flash_crowd", "slo"]["runs"], 2)
        text = self.suite("--seeds", "1-2")
        self.assertIn("per family and config", text)
        self.assertRegex(text, r"\nflash_crowd +slo +2 ")

    def test_check_exits_3_exactly_when_a_run_fails(self):
        result = run([SUITE, "--spec", self.spec, "--configs", self.configs, "--workloads-dir",
                      os.path.join(self.tmp, "workloads"), "--out",
                      os.path.join(self.tmp, "out"), "-j", "1", "-o", "json", "--check"])
        failed = json.loads(result.stdout)["summary"]["failed"]
        self.assertEqual(result.returncode, 3 if failed else 0, result.stderr)

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

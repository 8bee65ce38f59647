"""calibrate/fit.py: the context / fragmentation fit, on fixture numbers derived by hand, and
(when the memest command is at hand: $MEMEST_CLI, set by CTest) through the library itself."""
import json
import os
import pathlib
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import fit  # noqa: E402

MIB = 1 << 20
FIXTURES = HERE / "fixtures"
EXAMPLE = HERE.parent / "examples" / "h100-sxm-80gb.example.json"
PROBE_MODEL = {"hidden": 2048, "layers": 12, "heads": 16, "kv_heads": 4, "intermediate": 5632,
               "vocab": 32000}


def cli():
    path = os.environ.get("MEMEST_CLI")
    if not path or not os.path.exists(path):
        pytest.skip("no memest command (MEMEST_CLI)")
    return path


def test_fit_fixture_by_hand():
    runs = json.loads((FIXTURES / "probe-runs.synthetic.json").read_text())["runs"]
    r = fit.fit_runs(runs)
    # the fixture's note: fragmentation 54272000 / 524288000, context 3200 - 0.103515625 * 25600
    assert r["fragmentation"] == pytest.approx(0.103515625, rel=1e-12)
    assert r["context_bytes"] == pytest.approx(550 * MIB, rel=1e-12)
    assert not r["clamped"]
    assert r["points"] == 4
    # residuals by hand: fitted differences 1610, 2670, 3730, 4790 MiB against 1600, 2700,
    # 3700, 4800: -10, 30, -30, 10 MiB -> rms sqrt((100 + 900 + 900 + 100) / 4) = sqrt(500) MiB
    assert r["rms_residual_bytes"] == pytest.approx(500 ** 0.5 * MIB, rel=1e-9)


def test_two_runs_fit_exactly():
    # measured = 512 MiB + modelled * 1.25 at 8 and 16 GiB
    pts = [(8192 * MIB, (512 + 8192 * 1.25) * MIB), (16384 * MIB, (512 + 16384 * 1.25) * MIB)]
    r = fit.fit_context_fragmentation(pts)
    assert r["fragmentation"] == pytest.approx(0.25)
    assert r["context_bytes"] == pytest.approx(512 * MIB)
    assert r["rms_residual_bytes"] == pytest.approx(0, abs=1e-3)


def test_negative_fragmentation_is_refitted_at_zero():
    # differences 1000 and 900 MiB as modelled grows: slope < 0 -> fragmentation 0, context the
    # mean difference, 950 MiB
    r = fit.fit_context_fragmentation([(1000 * MIB, 2000 * MIB), (2000 * MIB, 2900 * MIB)])
    assert r["clamped"]
    assert r["fragmentation"] == 0
    assert r["context_bytes"] == pytest.approx(950 * MIB)
    assert r["unclamped"]["fragmentation"] == pytest.approx(-0.1)


def test_negative_context_is_refitted_at_zero():
    # differences 100 and 500 MiB at 1000 and 2000 MiB: line 0.4 x - 300 (context < 0) ->
    # through the origin: (1000*100 + 2000*500) / (1000^2 + 2000^2) = 1100000 / 5000000 = 0.22
    r = fit.fit_context_fragmentation([(1000 * MIB, 1100 * MIB), (2000 * MIB, 2500 * MIB)])
    assert r["clamped"]
    assert r["context_bytes"] == 0
    assert r["fragmentation"] == pytest.approx(0.22)
    assert r["unclamped"]["context_bytes"] == pytest.approx(-300 * MIB)


@pytest.mark.parametrize("pts", [[], [(1e9, 2e9)], [(1e9, 2e9), (1e9, 2.1e9)], [(1e9, -1), (2e9, 3e9)]])
def test_unfittable(pts):
    with pytest.raises(ValueError):
        fit.fit_context_fragmentation(pts)


def test_modelled_bytes_of_a_response():
    response = {"peak_stage": 1, "layout": {"cp": 1},
                "stages": [{}, {"peak_bytes": 30e9, "overheads": {"context_bytes": 1e9,
                                                                    "fragmentation_bytes": 4e9}}]}
    assert fit.modelled_bytes(response) == 25e9
    response["layout"]["cp"] = 2
    response["gpu"] = {"profile": {"cp_buffer_mib": 1000}}
    assert fit.modelled_bytes(response) == 25e9 - 1000 * MIB


def test_update_profile_keeps_the_rest():
    base = json.loads(EXAMPLE.read_text())
    r = {"context_bytes": 700.04 * MIB, "fragmentation": 0.123456, "points": 3}
    out = fit.update_profile(base, r, {"tool": "calibrate/probe.py", "runs": []})
    assert out["context_mib"] == 700.0
    assert out["fragmentation"] == 0.1235
    assert list(out)[-1] == "measured"
    assert out["measured"]["note"] == base["measured"]["note"]
    assert out["measured"]["probe"]["fit"]["points"] == 3
    assert out["gemm_half_tokens"] == base["gemm_half_tokens"]
    assert base["context_mib"] == 1024  # the base is not modified
    assert "measured" not in fit.strip_measured(out)


def test_probe_request_matches_the_framework():
    req = fit.probe_request(PROBE_MODEL, {"memory_gib": 80, "measured": {}}, 2048, 2, 4, True)
    assert req["gpu"] == {"memory_gib": 80}
    assert req["training"] == {"seq_len": 2048, "micro_batch": 2, "global_batch": 8,
                               "recompute": "full", "flash_attention": True}
    assert req["parallel"] == {"gpus": 1, "tp": 1, "cp": 1, "pp": 1}
    assert req["model"]["num_key_value_heads"] == 4


def test_through_memest_fit_reproduces_the_measured_peaks():
    """Predictions of the probe's runs from the memest command; measured peaks made as
    600 MiB + modelled * 1.15; the fitted profile, given back to memest, predicts those peaks."""
    command = cli()
    gpu = fit.strip_measured(json.loads(EXAMPLE.read_text()))  # the library does not take "measured" yet
    runs = []
    for seq, mb, ckpt in [(1024, 1, False), (2048, 1, False), (4096, 2, False), (4096, 2, True)]:
        resp = fit.memest_request(fit.probe_request(PROBE_MODEL, gpu, seq, mb, 1, ckpt), command)
        b = fit.modelled_bytes(resp)
        # the response's own terms: peak = context + modelled * (1 + fragmentation)
        assert resp["peak_bytes"] == pytest.approx(gpu["context_mib"] * MIB + b * (1 + gpu["fragmentation"]))
        runs.append({"seq_len": seq, "micro_batch": mb, "checkpointing": ckpt,
                     "modelled_bytes": b, "measured_peak_bytes": 600 * MIB + b * 1.15})
    r = fit.fit_runs(runs)
    assert r["fragmentation"] == pytest.approx(0.15, rel=1e-9)
    assert r["context_bytes"] == pytest.approx(600 * MIB, rel=1e-6)
    updated = fit.strip_measured(fit.update_profile(gpu, r, {"runs": runs}))
    for run in runs:
        resp = fit.memest_request(fit.probe_request(PROBE_MODEL, updated, run["seq_len"],
                                                    run["micro_batch"], 1, run["checkpointing"]), command)
        assert resp["peak_bytes"] == pytest.approx(run["measured_peak_bytes"], rel=1e-6)


def test_memest_refusal_is_reported():
    command = cli()
    req = fit.probe_request(PROBE_MODEL, {"memory_gib": 80, "bogus": 1}, 1024, 1, 1, False)
    with pytest.raises(RuntimeError, match="gpu.bogus"):
        fit.memest_request(req, command)

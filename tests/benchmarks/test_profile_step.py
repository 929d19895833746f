"""`benchmarks/profile_step.py`: reading XLA's optimised HLO and attributing thunks to model
parts (pure text processing: no model is built, so it runs under every backend)."""

import gzip
import json
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))

import profile_step  # noqa: E402

HLO = """HloModule jit_train_step, entry_computation_layout={()}

%fused_computation.41 (param_0: f32[896,7859], param_1: f32[512,7859]) -> f32[896,512] {
  %param_0 = f32[896,7859]{1,0} parameter(0)
  %param_1 = f32[512,7859]{1,0} parameter(1)
  ROOT %dot.63 = f32[896,512]{1,0} dot(%param_0, %param_1), lhs_contracting_dims={1}, rhs_contracting_dims={1}, metadata={op_name="jit(train_step)/transpose(jvp(decoder))/output_projection/dot_general"}
}

%wrapped_exponential_computation (param_0.1: f32[64,14,7859]) -> f32[64,14,7859] {
  %param_0.1 = f32[64,14,7859]{2,1,0} parameter(0)
  ROOT %exponential.1 = f32[64,14,7859]{2,1,0} exponential(%param_0.1)
}

ENTRY %main.1 (p0: f32[896,7859], p1: f32[512,7859], p2: f32[64,14,7859]) -> f32[896,512] {
  %p0 = f32[896,7859]{1,0} parameter(0)
  %p1 = f32[512,7859]{1,0} parameter(1)
  %p2 = f32[64,14,7859]{2,1,0} parameter(2)
  %wrapped_exponential = f32[64,14,7859]{2,1,0} fusion(%p2), kind=kLoop, calls=%wrapped_exponential_computation, metadata={op_name="jit(train_step)/jvp(compile_loss)/masked_cross_entropy/exp"}
  %broadcast.6 = f32[14,64,14,512]{3,2,1,0} broadcast(%p0), dimensions={}
  ROOT %ynn_fusion.41 = f32[896,512]{1,0} fusion(%p0, %p1), kind=kCustom, calls=%fused_computation.41, metadata={op_name="jit(train_step)/transpose(jvp(decoder))/output_projection/dot_general"}
}
"""


@pytest.fixture
def dump(tmp_path):
    (tmp_path / "module_0090.jit_train_step.cpu_after_optimizations.txt").write_text(HLO)
    return tmp_path


def test_hlo_ops_reads_shapes_op_names_and_which_fusions_hold_a_matmul(dump):
    ops = profile_step.hlo_ops(str(dump))
    assert ops["ynn_fusion.41"] == [
        "f32[896,512]{1,0}",
        "jit(train_step)/transpose(jvp(decoder))/output_projection/dot_general", True]
    assert ops["wrapped_exponential"][2] is False
    assert ops["broadcast.6"] == ["f32[14,64,14,512]{3,2,1,0}", "", False]


def test_hlo_ops_names_the_missing_dump(tmp_path):
    with pytest.raises(SystemExit, match="no optimised train-step HLO"):
        profile_step.hlo_ops(str(tmp_path))


@pytest.mark.parametrize("op_name, part", [
    ("jit(train_step)/transpose(jvp(decoder))/output_projection/dot_general",
     ("vocabulary projection + loss", "backward")),
    ("jit(train_step)/jvp(compile_loss)/masked_cross_entropy/exp",
     ("vocabulary projection + loss", "forward")),
    ("jit(train_step)/transpose(jvp(decoder))/while/body/closed_call/cell/lstm_cell_0/dot",
     ("decoder loop", "backward")),
    ("jit(train_step)/jvp(decoder)/while/body/closed_call/cell/combine/dot_general",
     ("decoder loop", "forward")),
    ("jit(train_step)/transpose(jvp(decoder))/transpose(jvp())/while/body/closed_call/cell/dot",
     ("decoder loop", "backward")),
    ("jit(train_step)/jvp(decoder)/jvp()/while/body/closed_call/cell/dot_general",
     ("decoder loop", "forward")),
    ("jit(train_step)/transpose(jvp(decoder))/tbi,tbo->io/dot_general",
     ("decoder, outside the loop", "backward")),
    ("jit(train_step)/jvp(decoder)/bridge_0/dot_general", ("decoder, outside the loop", "forward")),
    ("jit(train_step)/transpose(jvp(encoder))/bilstm_0/forward_lstm_0/while/body/dot",
     ("encoder", "backward")),
    ("jit(train_step)/adam/mul", ("optimizer", "forward")),
    ("", ("unattributed", "")),
])
def test_part_of_attributes_each_op_to_a_model_part_and_direction(op_name, part):
    assert profile_step.part_of(op_name) == part


def test_thunk_times_sums_the_trace_events_that_are_hlo_ops(tmp_path):
    trace = tmp_path / "trace" / "plugins" / "profile" / "run"
    trace.mkdir(parents=True)
    events = [
        {"ph": "X", "name": "ynn_fusion.41", "dur": 80.0},
        {"ph": "X", "name": "ynn_fusion.41", "dur": 82.0},
        {"ph": "X", "name": "ThunkExecutor::Execute", "dur": 500.0},  # not an HLO op
        {"ph": "M", "name": "thread_name"},
    ]
    with gzip.open(trace / "perfetto_trace.json.gz", "wt") as f:
        json.dump({"traceEvents": events}, f)
    ops = {"ynn_fusion.41": ["f32[896,512]{1,0}", "", True]}
    times = profile_step.thunk_times(str(tmp_path / "trace"), ops)
    assert dict(times) == {"ynn_fusion.41": [162.0, 2]}

"""Deltas: exact key set, finite floats, optional clamp, atomic round trip."""

from __future__ import annotations

import json
import math

import pytest
import torch

from crsp_ops.steering.deltas import (
    cluster_ids,
    deltas_from_values,
    deltas_to_list,
    deltas_to_tensor,
    load_deltas,
    save_deltas,
    validate_deltas,
)


def test_valid_deltas_come_back_ordered_as_floats():
    out = validate_deltas({"2": 1, "0": -0.5, "1": 3.25}, n_clusters=3, clamp=None)
    assert list(out) == ["0", "1", "2"] and out == {"0": -0.5, "1": 3.25, "2": 1.0}
    assert all(type(value) is float for value in out.values())


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"0": 1.0, "1": 2.0}, r"missing \['2'\]"),
        ({"0": 1.0, "1": 2.0, "2": 0.0, "3": 0.0}, r"unexpected \['3'\]"),
        ({"0": 1.0, "1": 2.0, "x": 0.0}, "unexpected"),
        ({"0": 1.0, "1": "2", "2": 0.0}, "cluster 1 must be a number"),
        ({"0": True, "1": 2.0, "2": 0.0}, "cluster 0 must be a number"),
        ({"0": 1.0, "1": math.nan, "2": 0.0}, "finite"),
        ({"0": 1.0, "1": 2.0, "2": -math.inf}, "finite"),
        ([1.0, 2.0, 3.0], "JSON object"),
        ({"0": 1.0, 1: 2.0, "1": 0.0, "2": 0.0}, "exactly"),  # duplicate id as int and str
    ],
)
def test_invalid_deltas_are_rejected(raw, message):
    with pytest.raises(ValueError, match=message):
        validate_deltas(raw, n_clusters=3, clamp=None)


def test_clamp():
    out = validate_deltas({"0": 50.0, "1": -50.0, "2": 1.5}, n_clusters=3, clamp=10.0)
    assert out == {"0": 10.0, "1": -10.0, "2": 1.5}
    with pytest.raises(ValueError, match="clamp"):
        validate_deltas({"0": 1.0}, n_clusters=1, clamp=-1.0)


def test_list_and_tensor_conversions():
    deltas = {"1": 2.0, "0": -1.0, "10": 4.0, **{str(i): 0.0 for i in range(2, 10)}}
    values = deltas_to_list(deltas)
    assert values[0] == -1.0 and values[1] == 2.0 and values[10] == 4.0  # numeric, not lexical
    assert deltas_from_values(values) == validate_deltas(deltas, n_clusters=11, clamp=None)
    tensor = deltas_to_tensor(deltas)
    assert tensor.dtype == torch.float32 and tensor.tolist() == values
    assert cluster_ids(3) == ["0", "1", "2"]


def test_save_and_load_round_trip(tmp_path):
    path = save_deltas(tmp_path / "d" / "deltas.json", {"1": 0.25, "0": -3.0})
    assert list(json.loads(path.read_text())) == ["0", "1"]
    assert load_deltas(path, n_clusters=2, clamp=None) == {"0": -3.0, "1": 0.25}
    assert load_deltas(path, n_clusters=2, clamp=1.0) == {"0": -1.0, "1": 0.25}
    with pytest.raises(ValueError, match="deltas.json.*missing"):
        load_deltas(path, n_clusters=3, clamp=None)
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ValueError, match="not JSON"):
        load_deltas(tmp_path / "bad.json", n_clusters=2, clamp=None)


def test_save_refuses_invalid_and_leaves_old_file(tmp_path):
    path = save_deltas(tmp_path / "deltas.json", {"0": 1.0})
    with pytest.raises(ValueError):
        save_deltas(path, {"0": math.nan})
    assert json.loads(path.read_text()) == {"0": 1.0}

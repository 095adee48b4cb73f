"""Reviews restated from the ``validated_trials`` table (``bf_assets.review.tables``): the
rows are read a column at a time, and give what ``DataFrame.to_dict("records")`` gives."""

from __future__ import annotations

import io
import pickle
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from bf_assets.corpus.run import review_trial
from bf_assets.ingest.discovery import discover_trials
from bf_assets.review import tables
from bf_assets.review.tables import frame_records, reviews_from_frame, validated_frames
from bf_sample.generator import generate_corpus


def _as_warehouse_reads(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` written and read back as the Parquet IO manager does (its dtypes on load)."""
    buf = io.BytesIO()
    df.to_parquet(buf, index=False)
    return pq.read_table(io.BytesIO(buf.getvalue())).to_pandas()


def test_the_records_are_the_frame_rows_with_missing_values_read_alike() -> None:
    df = pd.DataFrame(
        {
            "s": pd.array(["a", None, "c"], dtype="string"),
            "i": pd.array([1, None, 3], dtype="Int64"),
            "f": [0.5, float("nan"), None],
            "b": [True, False, True],
            "o": ["x", None, "z"],
        }
    )
    for frame in (df, _as_warehouse_reads(df), df.iloc[0:0]):
        got = list(frame_records(frame))
        want = frame.to_dict(orient="records")
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert list(g) == list(w)
            for k in g:
                gv, wv = tables._cell_value(g, k), tables._cell_value(w, k)
                assert gv == wv and type(gv) is type(wv), (k, gv, wv)


def test_restated_reviews_are_the_ones_the_records_of_the_frame_give(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    generate_corpus(tmp_path / "corpus", 30, seed=7)
    reviews = [review_trial(r) for r in discover_trials([tmp_path / "corpus" / "jobs"])]
    validated, _ = validated_frames(reviews)
    df = _as_warehouse_reads(validated)
    got = reviews_from_frame(df)

    def by_to_dict(frame: pd.DataFrame):  # type: ignore[no-untyped-def]
        return iter(frame.to_dict(orient="records"))

    monkeypatch.setattr(tables, "frame_records", by_to_dict)  # the old way, to compare
    want = reviews_from_frame(df)
    assert len(got) == len(reviews) == 30
    assert [pickle.dumps(r) for r in got] == [pickle.dumps(r) for r in want]

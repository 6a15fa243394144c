"""A planted checkpoint cannot ask for more memory than the file holds: the bytes values, numpy
arrays and tensor records it asks for are held to the file's size before anything is allocated,
and refused in one line."""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from service.learn.checkpoint_file import CheckpointRefused, load_checkpoint, save_checkpoint

HUGE = 4_000_000_000  # bytes a planted pickle asks for
PICKLE = "archive/data.pkl"


def _long(n: int) -> bytes:
    return b"\x8a\x05" + n.to_bytes(5, "little")  # LONG1 of five bytes


def _planted(tmp_path: Path, pickle: bytes | None = None, record: bytes | None = None) -> Path:
    """A checkpoint as save_checkpoint writes it, its pickle replaced by ``pickle``, or its
    tensor's record by ``record`` (deflated: a few kB on disk)."""
    good, out = tmp_path / "good.pt", tmp_path / "planted.pt"
    save_checkpoint(good, {"model": {"beta": torch.arange(6.0)}, "extra": {"a": np.arange(3)}})
    with zipfile.ZipFile(good) as source, zipfile.ZipFile(out, "w") as planted:
        for info in source.infolist():
            data, how = source.read(info.filename), zipfile.ZIP_STORED
            if info.filename == PICKLE and pickle is not None:
                data = pickle
            if info.filename.endswith("/data/0") and record is not None:
                data, how = record, zipfile.ZIP_DEFLATED
            planted.writestr(info.filename, data, compress_type=how)
    return out


@pytest.mark.parametrize(
    ("pickle", "says"),
    [
        (b"\x80\x02cbuiltins\nbytes\n" + _long(HUGE) + b"\x85R.", "bytes(4,000,000,000)"),
        (
            b"\x80\x02cnumpy._core.multiarray\n_reconstruct\ncnumpy\nndarray\n"
            + _long(HUGE)
            + b"\x85U\x01b\x87R.",
            "an array of 4,000,000,000 bytes",
        ),
    ],
    ids=["bytes", "array"],
)
def test_a_pickle_asking_for_more_than_the_file_is_refused(
    tmp_path: Path, pickle: bytes, says: str
) -> None:
    with pytest.raises(CheckpointRefused, match="refusing to load the checkpoint") as refused:
        load_checkpoint(_planted(tmp_path, pickle=pickle))
    assert says in str(refused.value)


@pytest.mark.parametrize("name", ["numpy\nndarray", "builtins\nbytes"])
def test_arrays_and_bytes_cannot_be_built_past_the_bound_with_newobj(
    tmp_path: Path, name: str
) -> None:
    pickle = b"\x80\x02c" + name.encode() + b"\n" + _long(HUGE) + b"\x85\x85\x81."
    with pytest.raises(TypeError):
        load_checkpoint(_planted(tmp_path, pickle=pickle))


@pytest.mark.parametrize(
    "name", ["builtins\nbytearray", "torch\nFloatTensor", "torch.cuda\nLongTensor"]
)
def test_torchs_own_types_that_allocate_from_a_number_are_refused(
    tmp_path: Path, name: str
) -> None:
    pickle = b"\x80\x02c" + name.encode() + b"\n" + _long(HUGE) + b"\x85R."
    shown = name.replace("\n", ".")
    with pytest.raises(CheckpointRefused, match=f"it names {shown}, which no checkpoint holds"):
        load_checkpoint(_planted(tmp_path, pickle=pickle))


def test_a_record_inflating_past_the_file_is_refused_unread(tmp_path: Path) -> None:
    path = _planted(tmp_path, record=bytes(50_000_000))
    assert path.stat().st_size < 100_000
    with pytest.raises(CheckpointRefused, match="inflates to 50,000,000 bytes, more than"):
        load_checkpoint(path)


def test_a_file_that_is_no_zip_archive_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "checkpoint.pt"
    path.write_bytes(b"\x80\x02}q\x00.")  # a bare pickle, as torch wrote before 1.6
    with pytest.raises(CheckpointRefused, match=r"not the zip archive torch\.save writes"):
        load_checkpoint(path)

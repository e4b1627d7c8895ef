"""``crsp-ops config show | head``: a reader that leaves early ends the CLI without a traceback."""

import subprocess

from tests.recipes.conftest import REPO, recipe_env


def test_closed_pipe_is_quiet():
    done = subprocess.run(["bash", "-c", "crsp-ops config show | true; echo ${PIPESTATUS[0]}"],
                          cwd=REPO, env=recipe_env(REPO), capture_output=True, text=True,
                          timeout=120)
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr
    assert done.stdout.strip() in {"0", "141"}  # 0 when it wrote everything before `true` left

"""``git.dirty`` tells code changes apart from the ``dvc.lock`` every stage run rewrites."""

import subprocess

from crsp_ops.tracking.run_tags import git_tags


def test_a_rewritten_dvc_lock_is_not_dirty_but_code_is(tmp_path):
    def git(*args):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
                       cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "dvc.lock").write_text("a\n")
    (tmp_path / "stage.py").write_text("x = 1\n")
    git("add", ".")
    git("commit", "-qm", "init")
    (tmp_path / "dvc.lock").write_text("b\n")  # `make demo` records new run ids
    assert git_tags(tmp_path)["git.dirty"] == "false"
    (tmp_path / "stage.py").write_text("x = 2\n")
    assert git_tags(tmp_path)["git.dirty"] == "true"

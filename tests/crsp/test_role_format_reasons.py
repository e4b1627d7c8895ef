"""benchmarks/crsp_role_format.py: why well-formed proposals were not valid."""

from __future__ import annotations

from benchmarks.crsp_role_format import invalid_reasons
from crsp_ops.crsp.tasks import CodeTask, TaskType
from crsp_ops.crsp.tasks.proposals import ProposalCheck


def test_only_well_formed_invalid_proposals_count_commonest_first():
    task = CodeTask(TaskType.CODE_O, "def f(x):\n    return x", ("1",), ("1",))
    missing = "error: TypeError: f() missing 1 required positional argument: 'k'" + " …" * 40
    checks = [ProposalCheck(False, None, "format not followed"),
              ProposalCheck(True, task),
              ProposalCheck(True, None, "error: NameError: name 'x' is not defined"),
              *[ProposalCheck(True, None, missing)] * 3]
    assert invalid_reasons(checks) == {missing[:80]: 3,
                                       "error: NameError: name 'x' is not defined": 1}
    assert list(invalid_reasons(checks, top=1)) == [missing[:80]]

"""Self-play tasks: records, prompts, answer checking, proposal validation, starter tasks."""

from crsp_ops.crsp.tasks.answers import (
    SolutionCheck,
    check_solutions,
    extract_answer,
    judge_execution,
    literal_equal,
    math_answers_match,
    verification_job,
)
from crsp_ops.crsp.tasks.prompts import (
    propose_messages,
    propose_prompt,
    propose_response,
    solve_messages,
    solve_prompt,
    solve_response,
    task_statement,
)
from crsp_ops.crsp.tasks.proposals import (
    ProposalCheck,
    ProposalDraft,
    parse_proposal,
    validate_proposals,
)
from crsp_ops.crsp.tasks.starter_tasks import starter_tasks
from crsp_ops.crsp.tasks.task_types import (
    CODE_TASK_TYPES,
    CodeTask,
    MathTask,
    PromptTask,
    Task,
    TaskType,
)

__all__ = [
    "CODE_TASK_TYPES", "CodeTask", "MathTask", "PromptTask", "ProposalCheck", "ProposalDraft",
    "SolutionCheck",
    "Task", "TaskType", "check_solutions", "extract_answer", "judge_execution", "literal_equal",
    "math_answers_match", "parse_proposal", "propose_messages", "propose_prompt",
    "propose_response", "starter_tasks", "solve_messages", "solve_prompt", "solve_response",
    "task_statement",
    "validate_proposals", "verification_job",
]

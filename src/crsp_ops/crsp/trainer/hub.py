"""``push_to_hub``: a trained model's folder to a Hugging Face Hub repository.

The Hub is ``HF_ENDPOINT`` (a company's own Hub works as the public one); offline
(``HF_HUB_OFFLINE``) or refused, the push fails in one line.
"""

from __future__ import annotations

import os
from pathlib import Path

from huggingface_hub import HfApi

from crsp_ops.errors import DataError


def push_folder(folder: Path, repo_id: str, *, token: str | None, private: bool | None,
                message: str) -> str:
    """Create ``repo_id`` if needed and upload ``folder``; return the commit's URL.

    Raises:
        DataError: offline, or the Hub answered with an error (one line).
    """
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on"):
        raise DataError(f"push_to_hub: HF_HUB_OFFLINE is set; {folder} was kept, push it "
                        f"later with `hf upload {repo_id} {folder}`")
    api = HfApi(token=token)
    try:
        api.create_repo(repo_id, private=private, exist_ok=True)
        info = api.upload_folder(repo_id=repo_id, folder_path=str(folder),
                                 commit_message=message,
                                 ignore_patterns=["checkpoints/*", ".*"])
    except Exception as error:  # the Hub client raises many kinds (HTTP, connection, auth)
        reason = str(error).strip().splitlines()[0] if str(error).strip() else ""
        raise DataError(f"push_to_hub: {repo_id}: {type(error).__name__}: {reason}") from None
    return str(getattr(info, "commit_url", info))

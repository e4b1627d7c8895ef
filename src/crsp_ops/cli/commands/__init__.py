"""The ``crsp-ops`` subcommands and the driver module each one runs."""

COMMANDS: dict[str, str] = {
    "init": "pipelines.init",
    "config": "pipelines.config_cmd",
    "limo": "pipelines.limo",
    "financebench": "pipelines.financebench",
    "base-model": "pipelines.base_model",
    "clusters": "pipelines.clusters",
    "deltas": "pipelines.deltas",
    "generate-processor": "pipelines.generate_processor",
    "evolve": "pipelines.evolve",
    "optuna": "pipelines.optuna",
    "compare": "pipelines.compare",
    "seed": "pipelines.seed",
    "train": "pipelines.train",
    "serve": "pipelines.serve",
    "migrate": "pipelines.migrate",
    "convert-model": "pipelines.convert_model",
    "dvc-deps": "pipelines.dvc_deps",
    "tracking-replay": "pipelines.tracking_replay",
}

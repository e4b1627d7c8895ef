"""The ``crsp-ops`` subcommands and the driver module each one runs."""

COMMANDS: dict[str, str] = {
    "init": "crsp_ops.cli.commands.init",
    "config": "crsp_ops.cli.commands.config_cmd",
    "limo": "crsp_ops.cli.commands.limo",
    "financebench": "crsp_ops.cli.commands.financebench",
    "base-model": "crsp_ops.cli.commands.base_model",
    "clusters": "crsp_ops.cli.commands.clusters",
    "deltas": "crsp_ops.cli.commands.deltas",
    "generate-processor": "crsp_ops.cli.commands.generate_processor",
    "evolve": "crsp_ops.cli.commands.evolve",
    "optuna": "crsp_ops.cli.commands.optuna",
    "compare": "crsp_ops.cli.commands.compare",
    "seed": "crsp_ops.cli.commands.seed",
    "train": "crsp_ops.cli.commands.train",
    "serve": "crsp_ops.cli.commands.serve",
    "migrate": "crsp_ops.cli.commands.migrate",
    "convert-model": "crsp_ops.cli.commands.convert_model",
    "tracking-replay": "crsp_ops.cli.commands.tracking_replay",
}

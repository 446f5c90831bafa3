"""CP vs MCP on multiple-choice questions (Robinson et al. 2022): cloze and letter prompting. Stages:
``datasets.load_mcq`` -> ``prompts.build_plan`` -> the engine (``socbench.pipeline``) -> ``scoring.score_mcq``
(pure) -> ``report.mcq.write_mcq_files``; the records are in ``socbench.mcq.mcq_types``. Nothing is imported
here, so the CLI reads ``socbench.mcq.mcq_config`` for its flags without importing scoring and plotting.
"""

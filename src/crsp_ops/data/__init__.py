"""Datasets: LIMO-format math rows and FinanceBench-format finance questions (real or synthetic)."""

"""The recall jobs: the wiki and the vault's lint."""

import dagster as dg

from memory_platform.defs.recall.assets import vault_lint, vault_wiki

build_wiki_job = dg.define_asset_job(
    "build_wiki_job",
    selection=[vault_wiki],
    description="Take people's edits to a namespace's wiki files into the vault, then rewrite "
    "the wiki from the vault (never over an edit not taken in).",
)


lint_vault_job = dg.define_asset_job(
    "lint_vault_job",
    selection=[vault_lint],
    description="Find contradictions, stale claims, orphans and near-duplicates in every "
    "primary namespace, as findings for review. Changes no memory.",
)

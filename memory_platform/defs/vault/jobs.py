"""The review decision's job."""

import dagster as dg

from memory_platform.defs.vault.assets import vault_promotions

vault_promotion_job = dg.define_asset_job(
    "vault_promotion_job",
    # Without the review_backlog check: a decision should take as little time as it can
    # (the check step costs ~0.2 s a run here); the check runs with every dream run on
    # shadow_memories, and with materializations launched from the UI.
    selection=dg.AssetSelection.assets(vault_promotions).without_checks(),
    description="Apply one review decision (approve, edit, change namespace, supersede) to a "
    "pending shadow entry: the promotion as a Dagster run, whichever face it came from.",
)

"""Non-interactive releases with a differential-privacy guarantee (issue 17).

``safepub`` releases a table's quasi-identifiers truthfully (sampled, generalised, small classes suppressed)
with (ε, δ)-DP (Bild, Kuhn, Prasser, PoPETs 2018). ``parameters`` gives SafePub's β and k; ``report`` the
owner's utility report. The CLI's ``privdb publish`` charges every release to the owner's ledger account.
"""

from privdb.publish.parameters import SafePubParameters, parameters
from privdb.publish.safepub import PublicHierarchy, Published, safepub

__all__ = ["PublicHierarchy", "Published", "SafePubParameters", "parameters", "safepub"]

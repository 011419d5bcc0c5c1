"""The attention explorer: the site's trained models exported for a page that runs them in the
browser ([`export`][attnprimer.site.explorer.export]), what its script needs for each family of
models ([`families`][attnprimer.site.explorer.families]), and the chapters' interventions on
one input as that page offers them ([`interventions`][attnprimer.site.explorer.interventions],
the oracle its browser tests compare with).
"""

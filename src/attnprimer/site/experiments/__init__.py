"""The experiments that settle a chapter's claims: one module per chapter, named by its slug.

Each module trains nothing itself: it asks the catalogue
([`attnprimer.site.catalogue`][attnprimer.site.catalogue]) for the models it compares and measures
them (held-out accuracy, interventions on the attention, training curves). The chapter's figure
module draws the results, and the chapter's claims test checks what the page says about them.
Nothing here imports matplotlib.
"""

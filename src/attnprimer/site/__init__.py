"""What builds the site: everything the pages show, computed from the mechanisms and the
trained models.

* [`catalogue`][attnprimer.site.catalogue]: every trained model the site uses, by its settings;
* [`experiments`][attnprimer.site.experiments]: one module per chapter (probes, interventions,
  ablations); they return data;
* [`figures`][attnprimer.site.figures]: one module per chapter, recipes that draw or tabulate
  the experiments' data, and the registry that renders them;
* [`exercises`][attnprimer.site.exercises]: the labs' self-checking exercises;
* [`explorer`][attnprimer.site.explorer]: the trained models exported for the page that runs
  them in the browser, and the interventions it offers;
* [`report`][attnprimer.site.report]: plain-text reports of one input (the CLI's ``test``);
* [`code_views`][attnprimer.site.code_views]: the teaching lines of the package a chapter shows;
* [`bench`][attnprimer.site.bench]: measurements of what attention and training cost.

It may import the mechanisms and [`attnprimer.training`][attnprimer.training]; neither imports it.
"""

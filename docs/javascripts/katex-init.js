// Typeset the math that pymdownx.arithmatex (generic: true) leaves in each page:
//   inline   <span class="arithmatex">\( ... \)</span>
//   display  <div class="arithmatex">\[ ... \]</div>   (also $$...$$ and \begin{env}...\end{env})
// and the labs' notebook Markdown cells, whose math is left as $...$ and $$...$$ text.
// KaTeX itself is served from assets/vendor/katex/ (see docs/hooks/math_assets.py).
//
// Material's `document$` emits once on page load and again after every instant navigation,
// so this keeps working if `navigation.instant` is switched on later.
(function () {
  "use strict";

  function typeset(root) {
    // One macro table per page: a \gdef / \newcommand in one formula is visible in the
    // formulas after it on the same page, and nothing leaks across pages.
    var macros = {};
    root.querySelectorAll(".arithmatex").forEach(function (el) {
      if (el.dataset.katexRendered) {
        return;
      }
      var tex = el.textContent.trim();
      var display = tex.startsWith("\\[");
      if (display || tex.startsWith("\\(")) {
        tex = tex.slice(2, -2);
      }
      // throwOnError: false renders a bad formula as its source in red instead of aborting
      // the rest of the page; the parse error is in the element's title attribute.
      katex.render(tex, el, {
        displayMode: display,
        throwOnError: false,
        macros: macros,
      });
      el.dataset.katexRendered = "true";
    });
    // Notebook cells (the labs): KaTeX's auto-render finds the delimiters in the text.
    root.querySelectorAll(".jupyter-wrapper .jp-RenderedMarkdown").forEach(function (el) {
      renderMathInElement(el, {
        delimiters: [
          { left: "$$", right: "$$", display: true },
          { left: "$", right: "$", display: false },
        ],
        throwOnError: false,
        macros: macros,
      });
    });
  }

  if (typeof document$ !== "undefined") {
    document$.subscribe(function (doc) {
      typeset(doc.body);
    });
  } else {
    document.addEventListener("DOMContentLoaded", function () {
      typeset(document.body);
    });
  }
})();

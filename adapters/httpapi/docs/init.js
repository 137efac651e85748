// Starts Redoc on the /docs page of userd. It lives in a file of its own so
// that the page's Content-Security-Policy allows no inline script.
(function () {
  'use strict';
  var el = document.getElementById('redoc');
  var font = 'system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif';
  Redoc.init(el.getAttribute('data-spec-url'), {
    // Redoc puts this nonce on the <style> elements it injects; the CSP
    // allows inline styles with it only.
    nonce: el.getAttribute('data-nonce'),
    // Search runs in a worker made from a blob: URL, which the CSP forbids.
    disableSearch: true,
    hideHostname: true,
    pathInMiddlePanel: true,
    requiredPropsFirst: true,
    expandResponses: '200,201,204',
    jsonSampleExpandLevel: 3,
    theme: {
      typography: {
        fontFamily: font,
        headings: { fontFamily: font },
        code: { fontFamily: 'ui-monospace, SFMono-Regular, Menlo, Consolas, monospace' }
      }
    }
  }, el);
})();

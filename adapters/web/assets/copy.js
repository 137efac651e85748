// The copy buttons of userd's pages: a progressive enhancement. The
// secret is in a read-only input that a person selects and copies
// without any script; with this one, a button next to it copies it to
// the clipboard and says so. The button stays hidden without it.
"use strict";

(function () {
  function say(status, message) {
    if (status) {
      status.textContent = message;
    }
  }

  // fallback copies the selected input the old way, for a browser
  // without the asynchronous clipboard (or that refuses it).
  function fallback(input) {
    input.focus();
    input.select();
    try {
      return document.execCommand("copy");
    } catch (e) {
      return false;
    }
  }

  document.querySelectorAll("[data-copy]").forEach(function (button) {
    var input = document.getElementById(button.dataset.copy);
    if (!input) {
      return;
    }
    var status = document.querySelector("[data-copy-status]");
    button.hidden = false;
    button.addEventListener("click", function () {
      var done = function () { say(status, "Copied to the clipboard."); };
      var failed = function () {
        if (fallback(input)) {
          done();
        } else {
          say(status, "The browser did not allow copying: select the text and copy it.");
        }
      };
      if (navigator.clipboard && typeof navigator.clipboard.writeText === "function") {
        navigator.clipboard.writeText(input.value).then(done, failed);
      } else {
        failed();
      }
    });
  });
})();

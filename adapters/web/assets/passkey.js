// The passkey buttons of userd's pages: the only script they have, since
// WebAuthn has no form of its own. Everything else on the pages works
// without JavaScript. A button asks userd for the ceremony's options
// (same origin, with the page's cookie), lets the browser talk to the
// authenticator, and posts the answer in its form as a plain form post.
"use strict";

(function () {
  function supported(kind) {
    return typeof window.PublicKeyCredential === "function" &&
      typeof PublicKeyCredential[kind] === "function";
  }

  function showError(box, message) {
    var el = box.querySelector("[data-passkey-error]");
    if (el) {
      el.textContent = message;
      el.hidden = false;
    }
  }

  function explain(err) {
    if (err && err.name === "NotAllowedError") {
      return "The passkey request was cancelled or timed out. Try again.";
    }
    if (err && err.name === "InvalidStateError") {
      return "This passkey is registered already.";
    }
    return (err && err.message) || "The passkey did not work. Try again.";
  }

  // options posts the form's fields (mfaToken, name, currentPassword) to
  // url and returns the {ceremonyId, publicKey} it answers, or throws its
  // {error}.
  async function options(url, form) {
    var body = new URLSearchParams();
    ["mfaToken", "name", "currentPassword"].forEach(function (n) {
      if (form.elements[n]) {
        body.set(n, form.elements[n].value);
      }
    });
    var res = await fetch(url, { method: "POST", body: body, credentials: "same-origin" });
    var data = await res.json().catch(function () { return {}; });
    if (!res.ok) {
      throw new Error(data.error || "The server refused the request (" + res.status + ").");
    }
    return data;
  }

  function wire(box, kind, ceremony) {
    var button = box.querySelector("[data-passkey-button]");
    var form = box.querySelector("form");
    if (!button || !form || !supported(kind)) {
      return;
    }
    box.hidden = false;
    button.addEventListener("click", async function () {
      button.disabled = true;
      try {
        var o = await options(box.dataset.options, form);
        var credential = await ceremony(PublicKeyCredential[kind](o.publicKey));
        form.elements.ceremonyId.value = o.ceremonyId;
        form.elements.credential.value = JSON.stringify(credential.toJSON());
        // The password served the options; the finish does not take it.
        if (form.elements.currentPassword) {
          form.elements.currentPassword.value = "";
        }
        form.submit();
      } catch (err) {
        showError(box, explain(err));
        button.disabled = false;
      }
    });
  }

  document.querySelectorAll("[data-passkey-login]").forEach(function (box) {
    wire(box, "parseRequestOptionsFromJSON", function (publicKey) {
      return navigator.credentials.get({ publicKey: publicKey });
    });
  });
  document.querySelectorAll("[data-passkey-register]").forEach(function (box) {
    wire(box, "parseCreationOptionsFromJSON", function (publicKey) {
      return navigator.credentials.create({ publicKey: publicKey });
    });
  });
})();

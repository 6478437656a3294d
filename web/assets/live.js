// Live updates, as progressive enhancement: the page works without this script. While a page
// shows something still going (an element with data-live), the script fetches the same page
// again every few seconds and swaps in the fresh copies of those elements. It stops once the
// fresh page has nothing live left.
(function () {
  "use strict";
  var every = 5000;
  function live() { return document.querySelectorAll("[data-live][id]"); }
  function refresh() {
    fetch(location.href, { credentials: "same-origin", cache: "no-store" })
      .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
      .then(function (html) {
        var fresh = new DOMParser().parseFromString(html, "text/html");
        var again = false;
        live().forEach(function (el) {
          var next = fresh.getElementById(el.id);
          if (!next) { return; }
          el.replaceWith(document.importNode(next, true));
          if (next.hasAttribute("data-live")) { again = true; }
        });
        if (again) { setTimeout(refresh, every); }
      })
      .catch(function () { setTimeout(refresh, 3 * every); });
  }
  if (live().length > 0) { setTimeout(refresh, every); }
})();

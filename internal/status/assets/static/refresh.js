// Reloads the page every data-refresh seconds. The pages work without it.
(function () {
  var s = parseInt(document.body.getAttribute("data-refresh"), 10);
  if (s > 0) { setTimeout(function () { location.reload(); }, s * 1000); }
})();

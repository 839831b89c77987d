// Adds a Copy button beside each command block. The pages work without it:
// a command is one line of its own, selected whole by a click.
(function () {
  if (!navigator.clipboard || !window.isSecureContext) { return; }
  document.querySelectorAll(".cmds code.cmd").forEach(function (code) {
    var b = document.createElement("button");
    b.type = "button";
    b.className = "copy";
    b.textContent = "Copy";
    b.addEventListener("click", function () {
      navigator.clipboard.writeText(code.textContent).then(function () {
        b.textContent = "Copied";
        setTimeout(function () { b.textContent = "Copy"; }, 2000);
      }, function () { b.textContent = "Select it to copy"; });
    });
    code.insertAdjacentElement("afterend", b);
  });
})();

// contrastkit HTML report: sort, filter and page the cards of a gallery.
// Plain JavaScript, no library, no request: works from file:// and zipped.
(function () {
  "use strict";
  var list = document.getElementById("cards");
  if (!list) { return; }
  var cards = Array.prototype.slice.call(list.children);
  cards.forEach(function (card, index) { card.dataset.position = String(index); });
  var perPage = parseInt(list.dataset.perPage, 10) || 48;
  var sort = document.getElementById("sort");
  var group = document.getElementById("group");
  var mark = document.getElementById("mark");
  var search = document.getElementById("search");
  var status = document.getElementById("status");
  var pager = document.getElementById("pager");
  var pageLabel = document.getElementById("page");
  var prev = document.getElementById("prev");
  var next = document.getElementById("next");
  var page = 0;
  var shown = cards;

  function value(card, key) {
    var raw = card.getAttribute("data-sort-" + key);
    var number = parseFloat(raw);
    return isNaN(number) ? 0 : number;
  }

  function order() {
    var parts = sort.value.split(":");
    var key = parts[0];
    var sign = parts[1] === "asc" ? 1 : -1;
    var sorted = cards.slice().sort(function (a, b) {
      var d = sign * (value(a, key) - value(b, key));
      return d !== 0 ? d : Number(a.dataset.position) - Number(b.dataset.position);
    });
    sorted.forEach(function (card) { list.appendChild(card); });
    return sorted;
  }

  function matches(card) {
    if (group.value && card.dataset.group !== group.value) { return false; }
    if (mark.value && card.dataset.marks.split("|").indexOf(mark.value) < 0) { return false; }
    var text = search.value.trim().toLowerCase();
    return !text || card.textContent.toLowerCase().indexOf(text) >= 0;
  }

  function update(resetPage) {
    if (resetPage) { page = 0; }
    shown = order().filter(matches);
    var pages = Math.max(1, Math.ceil(shown.length / perPage));
    page = Math.min(page, pages - 1);
    var first = page * perPage;
    cards.forEach(function (card) { card.hidden = true; });
    shown.slice(first, first + perPage).forEach(function (card) { card.hidden = false; });
    status.textContent = shown.length === 0 ? "No card matches." :
      "Cards " + (first + 1) + " to " + Math.min(first + perPage, shown.length) +
      " of " + shown.length + (shown.length < cards.length ? " (filtered from " + cards.length + ")" : "") + ".";
    pageLabel.textContent = "Page " + (page + 1) + " of " + pages;
    prev.disabled = page === 0;
    next.disabled = page >= pages - 1;
    pager.hidden = pages < 2;
  }

  document.getElementById("controls").hidden = false;
  [sort, group, mark].forEach(function (control) {
    control.addEventListener("change", function () { update(true); });
  });
  search.addEventListener("input", function () { update(true); });
  document.getElementById("controls").addEventListener("submit", function (event) { event.preventDefault(); });
  prev.addEventListener("click", function () { page -= 1; update(false); list.scrollIntoView(); });
  next.addEventListener("click", function () { page += 1; update(false); list.scrollIntoView(); });
  update(true);
}());

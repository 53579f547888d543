// Filter boxes: <input class="filter" data-table="ID"> hides the rows of table#ID that do not match.
document.querySelectorAll("input.filter").forEach((box) => {
  const table = document.getElementById(box.dataset.table);
  if (!table) return;
  box.addEventListener("input", () => {
    const needle = box.value.trim().toLowerCase();
    table.querySelectorAll("tbody tr").forEach((row) => {
      row.hidden = needle !== "" && !row.textContent.toLowerCase().includes(needle);
    });
  });
});

// Sortable tables: <table class="sortable">: a click on a column's header sorts the rows by it
// (numbers as numbers, "-" last), a second click the other way.
document.querySelectorAll("table.sortable").forEach((table) => {
  table.querySelectorAll("thead th").forEach((th, index) => {
    th.classList.add("sorts");
    th.title = "sort by " + th.textContent.trim();
    th.addEventListener("click", () => {
      const down = th.dataset.sorted === "up";
      table.querySelectorAll("thead th").forEach((x) => delete x.dataset.sorted);
      th.dataset.sorted = down ? "down" : "up";
      const body = table.tBodies[0];
      const key = (row) => {
        const text = (row.cells[index] ? row.cells[index].innerText : "").trim();
        const n = Number(text.replace(/,/g, ""));
        return text === "" || text === "-" || text === "?" ? null : Number.isNaN(n) ? text.toLowerCase() : n;
      };
      const rows = [...body.rows].filter((r) => r.cells.length > 1);
      rows.sort((a, b) => {
        const [x, y] = [key(a), key(b)];
        if (x === null || y === null) return x === y ? 0 : x === null ? 1 : -1;
        const order = typeof x === typeof y ? (x < y ? -1 : x > y ? 1 : 0) : typeof x === "number" ? -1 : 1;
        return down ? -order : order;
      });
      body.append(...rows);
    });
  });
});

// Export links (<a data-export-chosen>): the rows ticked in the link's form become id=... in its
// address (GET, without the form's token).
document.querySelectorAll("a[data-export-chosen]").forEach((link) => {
  const base = link.getAttribute("href");
  link.addEventListener("click", () => {
    const ids = [...link.closest("form").querySelectorAll("input[name=id]:checked")].map((x) => x.value);
    link.href = base + ids.map((id) => "&id=" + encodeURIComponent(id)).join("");
  });
});

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

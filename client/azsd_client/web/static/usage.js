// azs web: the usage charts, drawn by Chart.js from the JSON blocks the page carries.
"use strict";
(function () {
  if (!window.Chart) return;
  const palette = ["#8250df", "#1a7f37", "#bc4c00", "#0969da", "#cf222e", "#9a6700", "#57606a", "#bf3989"];
  function data(id) {
    const node = document.getElementById(id);
    return node ? JSON.parse(node.textContent) : null;
  }
  const days = data("data-days");
  const dayCanvas = document.getElementById("chart-days");
  if (days && dayCanvas) {
    days.datasets.forEach((set, i) => { set.backgroundColor = palette[i % palette.length]; });
    new Chart(dayCanvas, {
      type: "bar",
      data: days,
      options: {
        animation: false, responsive: true, maintainAspectRatio: false,
        scales: { x: { stacked: true }, y: { stacked: true, title: { display: true, text: "USD" } } },
      },
    });
  }
  const kinds = data("data-kinds");
  const kindCanvas = document.getElementById("chart-kinds");
  if (kinds && kindCanvas) {
    kinds.datasets[0].backgroundColor = palette;
    new Chart(kindCanvas, {
      type: "bar",
      data: kinds,
      options: { animation: false, responsive: true, maintainAspectRatio: false, indexAxis: "y",
        plugins: { legend: { display: false } } },
    });
  }
})();

// Chart.js with the parts the page draws (stacked bars, annotation lines), loaded on its own
// (a dynamic import from stage-chart.js) so that the first answer does not wait for it.
import {
  Chart, BarController, BarElement, LineController, LineElement, PointElement,
  CategoryScale, LinearScale, Legend, Tooltip,
} from 'chart.js';
import annotationPlugin from 'chartjs-plugin-annotation';

Chart.register(BarController, BarElement, LineController, LineElement, PointElement,
  CategoryScale, LinearScale, Legend, Tooltip, annotationPlugin);

export { Chart };

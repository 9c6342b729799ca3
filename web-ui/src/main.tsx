import { render } from 'preact';
import 'uplot/dist/uPlot.min.css';
import './styles.css';
import { App } from './app';
import { ErrorsProvider } from './errors-context';

render(
  <ErrorsProvider>
    <App />
  </ErrorsProvider>,
  document.getElementById('app')!,
);

import { driveLongTurn, readJsonl, reportLine } from '/work/main/pkg-tests/test/long-turn-driver.js';
const events = readJsonl('/work/lt/generated-1000.jsonl');
for (const window of process.argv.slice(2).map(Number)) {
  console.log(reportLine('generated-1000', window, 'extractive', await driveLongTurn(events, window)));
}

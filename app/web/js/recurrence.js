// A schedule's recurrence as the Schedules form offers it: a few common ones picked from a
// list (every day, weekday, week or hour, at a time), read back from a schedule's RRULE so
// an edit shows them as picked, put in words for the list, and turned into the RRULE or
// cron the API takes; anything else is a custom RRULE or cron, as written.

export const REPEATS = [
  ['daily', 'Every day'],
  ['weekdays', 'Every weekday'],
  ['weekly', 'Every week'],
  ['hourly', 'Every hour'],
  ['rrule', 'Custom (RRULE)'],
  ['cron', 'Custom (cron)'],
];
export const DAYS = [
  ['MO', 'Monday'],
  ['TU', 'Tuesday'],
  ['WE', 'Wednesday'],
  ['TH', 'Thursday'],
  ['FR', 'Friday'],
  ['SA', 'Saturday'],
  ['SU', 'Sunday'],
];
const WEEKDAYS = 'MO,TU,WE,TH,FR';
/** The rules the list offers, read back so an edit shows them as picked. */
const PICKED = [
  [/^FREQ=DAILY;BYHOUR=(\d+);BYMINUTE=(\d+)$/, 'daily'],
  [new RegExp(`^FREQ=WEEKLY;BYDAY=${WEEKDAYS};BYHOUR=(\\d+);BYMINUTE=(\\d+)$`), 'weekdays'],
  [/^FREQ=WEEKLY;BYDAY=(MO|TU|WE|TH|FR|SA|SU);BYHOUR=(\d+);BYMINUTE=(\d+)$/, 'weekly'],
  [/^FREQ=HOURLY;BYMINUTE=(\d+)$/, 'hourly'],
];

const two = (n) => String(n).padStart(2, '0');

/** The browser's own zone: what a new schedule's times are wall-clock times of. */
export function browserZone() {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
}

/** A picked recurrence, as the form shows it, read back from a schedule's rule. */
export function pickedOf(schedule) {
  if (schedule.cron) return { repeat: 'cron', custom: schedule.cron };
  for (const [pattern, repeat] of PICKED) {
    const found = pattern.exec(schedule.rrule ?? '');
    if (!found) continue;
    const [, ...parts] = found;
    if (repeat === 'hourly') return { repeat, time: `00:${two(parts[0])}` };
    const day = repeat === 'weekly' ? parts.shift() : 'MO';
    return { repeat, day, time: `${two(parts[0])}:${two(parts[1])}` };
  }
  return { repeat: 'rrule', custom: schedule.rrule ?? '' };
}

/** A schedule's rule in words where it is one the list offers, else as written. */
export function describe(schedule) {
  const picked = pickedOf(schedule);
  const at = picked.time;
  switch (picked.repeat) {
    case 'daily':
      return `Every day at ${at}`;
    case 'weekdays':
      return `Every weekday at ${at}`;
    case 'weekly':
      return `Every ${DAYS.find(([d]) => d === picked.day)[1]} at ${at}`;
    case 'hourly':
      return `Every hour at :${at.slice(3)}`;
    default:
      return picked.custom;
  }
}

/** A recurrence as the API takes it, `rrule` or `cron` (the other null), from the form's
 * `repeat` (a REPEATS value), `custom` rule, `time` (HH:MM) and `day` (a DAYS value). */
export function ruleOf({ repeat, custom, time, day }) {
  if (repeat === 'cron') return { rrule: null, cron: custom.trim() };
  if (repeat === 'rrule') return { rrule: custom.trim(), cron: null };
  const [hour, minute] = time.split(':').map(Number);
  const at = `BYHOUR=${hour};BYMINUTE=${minute}`;
  const rules = {
    daily: `FREQ=DAILY;${at}`,
    weekdays: `FREQ=WEEKLY;BYDAY=${WEEKDAYS};${at}`,
    weekly: `FREQ=WEEKLY;BYDAY=${day};${at}`,
    hourly: `FREQ=HOURLY;BYMINUTE=${minute}`,
  };
  return { rrule: rules[repeat], cron: null };
}

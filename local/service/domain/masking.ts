/**
 * Masking of personal data in held-out example texts: URLs -> [URL], e-mail addresses ->
 * [EMAIL], phone numbers -> [PHONE]. URLs go first so an address inside a link is not half-masked.
 */

const URL_PATTERN = /\b(?:https?:\/\/|www\.)[^\s<>"']+/gi;
const EMAIL_PATTERN = /[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}/g;
/**
 * International (+44 20 7946 0958, +49 30 901820, +14155550100), bracketed area code
 * ((020) 7946 0958) or grouped digits (555 123 4567, 415-555-0100). Plain short numbers and
 * dates stay (the digit count below tells them apart).
 */
const PHONE_PATTERN =
  /(?<![\w+])(?:\+\d{9,15}|(?:\+\d{1,3}[\s.-]?)?(?:\(\d{1,4}\)[\s.-]?)?\d{2,4}(?:[\s.-]\d{2,8}){1,4})(?![\w])/g;
/** Fewer digits than this is a date, a price or a count, not a phone number. */
const MIN_PHONE_DIGITS = 9;
const MAX_PHONE_DIGITS = 15;

const TRAILING_PUNCTUATION = /[.,;:!?)\]}]+$/;

export function maskText(text: string): string {
  return text
    .replace(URL_PATTERN, (match) => {
      // Sentence punctuation after a link is not part of it.
      const trailing = TRAILING_PUNCTUATION.exec(match)?.[0] ?? '';
      return `[URL]${trailing}`;
    })
    .replace(EMAIL_PATTERN, '[EMAIL]')
    .replace(PHONE_PATTERN, (match) => {
      const digits = match.replace(/\D/g, '').length;
      return digits >= MIN_PHONE_DIGITS && digits <= MAX_PHONE_DIGITS ? '[PHONE]' : match;
    });
}

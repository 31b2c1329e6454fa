import { normalisePhone, PHONE_PATTERN } from '../../lib/phone';

describe('normalisePhone', () => {
  test.each([
    ['+1 (555) 010-2000', '+15550102000'],
    ['+15550102000', '+15550102000'],
    ['0015550102000', '+15550102000'],
    ['15550102000', '+15550102000'],
    ['+44 20 7946 0958', '+442079460958'],
    ['+55.11.99999-8888', '+5511999998888'],
    ['  +49/30/1234567 ', '+49301234567'],
  ])('%s → %s', (input, expected) => {
    expect(normalisePhone(input)).toBe(expected);
  });

  test.each([
    '',
    '+',
    'abc',
    '+1 555 CALL NOW',
    '+0 555 010 2000', // country codes never start with 0
    '+12345', // too short
    '+1234567890123456', // 16 digits: longer than E.164 allows
    '++15550102000',
    '+1555+0102000',
    '555-0102#12',
  ])('rejects %p', (input) => {
    expect(normalisePhone(input)).toBeUndefined();
  });
});

describe('PHONE_PATTERN (the documented rule)', () => {
  test('matches exactly the inputs normalisePhone accepts (written forms and random strings of phone-ish characters)', () => {
    const pattern = new RegExp(PHONE_PATTERN, 'u');
    const written = ['+15550102000', '+1 (555) 010-2000', '0015550102000', '15550102000', '0044 (20) 7946-0958', '(+44) 20.7946/0958', 'call me', '+0 12 345', '0123456789', '+1234567890123456', ''];
    const alphabet = ['0', '1', '2', '5', '9', '+', ' ', '-', '.', '(', ')', '/', 'a', '\t', '\u00a0'];
    let seed = 42;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const generated = Array.from({ length: 20_000 }, () => {
      let s = random() < 0.3 ? '+' : random() < 0.3 ? '00' : '';
      const len = 1 + Math.floor(random() * 22);
      for (let i = 0; i < len; i++) s += alphabet[Math.floor(random() * alphabet.length)];
      return s;
    });
    const disagree = [...written, ...generated].filter((s) => s.length <= 40 && pattern.test(s) !== (normalisePhone(s) !== undefined));
    expect(disagree).toEqual([]);
  });
});

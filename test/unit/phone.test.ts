import { normalisePhone } from '../../lib/phone';

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

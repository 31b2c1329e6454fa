/**
 * Money, the same on every screen (docs/ui.md, "Money"): US dollars with two decimals and thousands separators
 * ("$0.00", "$0.42", "$1,234.50"); an amount above zero that would show as $0.00 says "< $0.01", so a task that cost
 * something never reads as free. The task page said "$0.0000" and Projects "$0.00" for the same figures.
 */
const usd = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD', minimumFractionDigits: 2, maximumFractionDigits: 2 });

export function formatCost(amount: number): string {
  if (amount > 0 && amount < 0.005) return '< $0.01';
  return usd.format(amount);
}

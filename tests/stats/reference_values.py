#!/usr/bin/python3
"""Independent reference numbers for test_stats.cpp.

Written from the textbook formulas with mpmath (50 digits); shares no code with
src/stats. Run with Debian's /usr/bin/python3 (scipy is not installed):
    /usr/bin/python3 tests/stats/reference_values.py
"""
from mpmath import mp, mpf, sqrt, betainc, erfc, findroot, exp

mp.dps = 50


def t_cdf(t, df):
    # Student t CDF through the regularised incomplete beta function.
    x = df / (df + t * t)
    tail = betainc(df / 2, mpf(1) / 2, 0, x, regularized=True) / 2
    return 1 - tail if t > 0 else tail


def t_quantile(p, df):
    return findroot(lambda t: t_cdf(t, df) - p, 2)


def two_sided_t(t, df):
    return 2 * (1 - t_cdf(abs(t), df))


def mean(v):
    return sum(v) / len(v)


def var(v):
    m = mean(v)
    return sum((x - m) ** 2 for x in v) / (len(v) - 1)


def show(name, value):
    print(f"{name} = {mp.nstr(value, 15)}")


print("# t quantiles (more digits than the printed tables)")
for df in (1, 4, 9, 29):
    show(f"t_0.975,{df}", t_quantile(mpf("0.975"), df))

print("# paired: variant - base over 6 seeds")
base = [mpf(s) for s in ("1.4742", "1.4800", "1.4690", "1.4755", "1.4710", "1.4770")]
variant = [mpf(s) for s in ("1.3821", "1.3712", "1.3900", "1.3850", "1.3790", "1.3805")]
d = [v - b for v, b in zip(variant, base)]
n = len(d)
md, sd = mean(d), sqrt(var(d))
se = sd / sqrt(n)
tc = t_quantile(mpf("0.975"), n - 1)
show("mean", md); show("sd", sd); show("se", se)
show("ci_low", md - tc * se); show("ci_high", md + tc * se)
show("t", md / se); show("p", two_sided_t(md / se, n - 1))

print("# welch: x = variant (4 seeds), y = base (6 seeds)")
x = variant[:4]
y = base
vx, vy = var(x) / len(x), var(y) / len(y)
se = sqrt(vx + vy)
df = (vx + vy) ** 2 / (vx ** 2 / (len(x) - 1) + vy ** 2 / (len(y) - 1))
est = mean(x) - mean(y)
tc = t_quantile(mpf("0.975"), df)
show("estimate", est); show("se", se); show("df", df)
show("ci_low", est - tc * se); show("ci_high", est + tc * se)
show("t", est / se); show("p", two_sided_t(est / se, df))

print("# unpaired 2x2 interaction, I = A + B - AB - base, cells on different seeds")
cells = {
    "base": [mpf(s) for s in ("1.4742", "1.4800", "1.4690")],
    "A": [mpf(s) for s in ("1.3821", "1.3712", "1.3900", "1.3850")],
    "B": [mpf(s) for s in ("1.5060", "1.5010", "1.5100")],
    "AB": [mpf(s) for s in ("1.3550", "1.3600", "1.3480", "1.3520", "1.3575")],
}
coef = {"base": -1, "A": 1, "B": 1, "AB": -1}
est = sum(coef[g] * mean(v) for g, v in cells.items())
vs = {g: coef[g] ** 2 * var(v) / len(v) for g, v in cells.items()}
se = sqrt(sum(vs.values()))
df = sum(vs.values()) ** 2 / sum(vs[g] ** 2 / (len(cells[g]) - 1) for g in cells)
tc = t_quantile(mpf("0.975"), df)
show("estimate", est); show("se", se); show("df", df)
show("ci_low", est - tc * se); show("ci_high", est + tc * se)
show("p", two_sided_t(est / se, df))

print("# wilcoxon with ties and a zero: d = -1, 2, 2, 3, 3, 3, 0 (hand: V = 20, n = 6)")
V, nn = mpf(20), 6
var_v = mpf(nn * (nn + 1) * (2 * nn + 1)) / 24 - mpf((2**3 - 2) + (3**3 - 3)) / 48
z = (V - mpf(nn * (nn + 1)) / 4 - mpf(1) / 2) / sqrt(var_v)
show("var", var_v); show("z", z); show("p", erfc(z / sqrt(2)))

print("# shifted interaction: contrasts 0.05 + noise, noise = +-1/64, +-1/128, 0")
c = [mpf("0.05") + e for e in (mpf(1) / 64, -mpf(1) / 64, mpf(1) / 128, -mpf(1) / 128, 0)]
m, s = mean(c), sqrt(var(c))
tc = t_quantile(mpf("0.975"), len(c) - 1)
show("ci_low", m - tc * s / sqrt(len(c))); show("ci_high", m + tc * s / sqrt(len(c)))
show("ratio_low", exp(m - tc * s / sqrt(len(c))))

print("# wilcoxon normal approximation, no ties: d = -1..-5, 6..30 (V = 465 - 15 = 450)")
nn, V = 30, mpf(450)
z = (V - mpf(nn * (nn + 1)) / 4 - mpf(1) / 2) / sqrt(mpf(nn * (nn + 1) * (2 * nn + 1)) / 24)
show("z", z); show("p", erfc(z / sqrt(2)))
print("# Hollander & Wolfe depression data (R ?wilcox.test), normal approx forced: V = 40, n = 9")
nn, V = 9, mpf(40)
z = (V - mpf(nn * (nn + 1)) / 4 - mpf(1) / 2) / sqrt(mpf(nn * (nn + 1) * (2 * nn + 1)) / 24)
show("z", z); show("p", erfc(z / sqrt(2)))

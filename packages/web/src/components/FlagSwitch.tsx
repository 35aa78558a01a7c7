import * as Switch from '@radix-ui/react-switch';

/** An on/off switch whose accessible name names the flag and the environment. */
export function FlagSwitch({ flagKey, environment, checked, onChange, disabled }: { flagKey: string; environment: string; checked: boolean; onChange: (on: boolean) => void; disabled?: boolean }) {
  return (
    <Switch.Root className="switch" checked={checked} onCheckedChange={onChange} disabled={disabled} aria-label={`${flagKey} in ${environment}`}>
      <Switch.Thumb className="switch-thumb" />
    </Switch.Root>
  );
}

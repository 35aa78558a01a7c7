import * as Switch from '@radix-ui/react-switch';

/**
 * An on/off switch whose accessible name names the flag and the environment. When the caller's
 * role may not toggle, it is disabled and described by the page's note that says why.
 */
export function FlagSwitch({ flagKey, environment, checked, onChange, disabled, reasonId }: { flagKey: string; environment: string; checked: boolean; onChange: (on: boolean) => void; disabled?: boolean; reasonId?: string | undefined }) {
  return (
    <Switch.Root className="switch" checked={checked} onCheckedChange={onChange} disabled={disabled} aria-label={`${flagKey} in ${environment}`} aria-describedby={disabled ? reasonId : undefined}>
      <Switch.Thumb className="switch-thumb" />
    </Switch.Root>
  );
}
